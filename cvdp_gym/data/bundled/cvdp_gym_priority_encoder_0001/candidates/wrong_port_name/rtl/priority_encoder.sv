// Parameterized priority encoder: the highest-numbered active requestuest wins.
module priority_encoder #(
    parameter N = 8                       // number of requestuest lines, >= 2
) (
    input  logic [N-1:0]         request,
    output logic [$clog2(N)-1:0] idx,
    output logic                 valid
);

    // Scan from the lowest index upwards so that the last (highest)
    // active requestuest is the one that sticks.
    always_comb begin
        idx = '0;
        for (int i = 0; i < N; i++) begin
            if (request[i]) begin
                idx = i;
            end
        end
    end

    // Any active requestuest, including request[0], makes the output valid.
    assign valid = |request;

endmodule
