"""Typer commands whose options come from option-group dataclasses.

Typer reads a command's options from its signature and knows no dataclasses. :func:`grouped`
gives typer a signature in which every option-group parameter is replaced by its dataclass's
fields, each with the ``Annotated[type, typer.Option(...)]`` type and the default declared on
the field (the flag and help text live there, once), and calls the command with the groups
built from the parsed values. A field whose type is itself an option group is expanded the
same way, so a command's whole configuration can be one dataclass of groups.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from cvdp_gym.cli.options.group import Group

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def grouped(command: Callable[..., Any]) -> Callable[..., Any]:
    """The typer command for ``command``: its option-group parameters (a dataclass, or
    ``Annotated[dataclass, Group(...)]``) become one option per field; its other parameters
    stay as they are, in their order."""
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, Group]] = {}
    for param in inspect.signature(command, eval_str=True).parameters.values():
        found = _group_of(param.annotation)
        if found is None:
            params.append(param.replace(kind=_KEYWORD))
        else:
            groups[param.name] = found
            params.extend(_field_params(*found))
    names = [p.name for p in params]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TypeError(f"{command.__qualname__}: options declared twice: {', '.join(repeated)}")

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        built = {name: _build(cls, group, kwargs) for name, (cls, group) in groups.items()}
        return command(**kwargs, **built)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def _group_of(annotation: Any) -> tuple[type, Group] | None:
    """The dataclass and its :class:`Group` when ``annotation`` is an option group."""
    group = Group()
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *meta = typing.get_args(annotation)
        marks = [m for m in meta if isinstance(m, Group)]
        if not marks:
            return None
        group = marks[0]
    if not (isinstance(annotation, type) and dataclasses.is_dataclass(annotation)):
        return None
    unknown = sorted((set(group.defaults) | set(group.only or ())) - {f.name for f in dataclasses.fields(annotation)})
    if unknown:
        raise TypeError(f"{annotation.__name__} has no field(s) {', '.join(unknown)}")
    return annotation, group


def _field_params(cls: type, group: Group) -> list[inspect.Parameter]:
    """The typer parameters of the fields of ``cls`` that ``group`` shows, nested groups expanded."""
    hints = typing.get_type_hints(cls, include_extras=True)
    params: list[inspect.Parameter] = []
    for field in dataclasses.fields(cls):
        nested = _group_of(hints[field.name])
        if nested is not None:
            params.extend(_field_params(*nested))
        elif group.shows(field.name):
            default = group.defaults.get(field.name, field.default)
            if default is dataclasses.MISSING:
                default = inspect.Parameter.empty
            params.append(inspect.Parameter(field.name, _KEYWORD, default=default, annotation=hints[field.name]))
    return params


def _build(cls: type, group: Group, kwargs: dict[str, Any]) -> Any:
    """The group ``cls`` from the parsed options (taken out of ``kwargs``); a field this
    command does not show keeps its dataclass default."""
    hints = typing.get_type_hints(cls, include_extras=True)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        nested = _group_of(hints[field.name])
        if nested is not None:
            values[field.name] = _build(*nested, kwargs)
        elif group.shows(field.name):
            values[field.name] = kwargs.pop(field.name)
    return cls(**values)
