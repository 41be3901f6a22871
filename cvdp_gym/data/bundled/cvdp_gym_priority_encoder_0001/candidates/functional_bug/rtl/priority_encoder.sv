// Parameterized priority encoder: the highest-numbered active request wins.
module priority_encoder #(
    parameter N = 8                       // number of request lines, >= 2
) (
    input  logic [N-1:0]         req,
    output logic [$clog2(N)-1:0] idx,
    output logic                 valid
);

    // Scan from the lowest index upwards so that the last (highest)
    // active request is the one that sticks.
    always_comb begin
        idx = '0;
        for (int i = 0; i < N; i++) begin
            if (req[i]) begin
                idx = i;
            end
        end
    end

    // Any active request, including req[0], makes the output valid.
    assign valid = (idx != 0);

endmodule
