"""``cvdp-gym serve``: an HTTP grading service over :class:`cvdp_gym.grading.Grader`.

FastAPI and uvicorn (``pip install 'cvdp-gym[serve]'``) are imported here and nowhere
else in the package: ``import cvdp_gym`` stays light. :mod:`cvdp_gym.service.app` builds the
application (``create_app``), :mod:`cvdp_gym.service.metrics` keeps the Prometheus counters,
:mod:`cvdp_gym.service.client` is a small client that retries on 429.
"""
