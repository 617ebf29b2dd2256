// One lane of the AMP (hw/tile/amp.h): one accumulator row's multiply-accumulates for one
// `ipu.amp`, acc = fma(w[j], x[j], acc) for j = 0 .. terms-1 in order, one f32 rounding per MAC,
// bit for bit the C++ model's AmpUnit::multiply_accumulate. `half` selects f16 operands (in the
// low 16 bits of each 32-bit term; the f16 mode's 4 terms) or f32 (the f32 mode's 2 terms).
// The AMP's write-back `out += acc` is the same lane with one term: w = 1.0, x = out.
// Pipelined, one row per clock, latency 4 (AmpUnit::kLaneLatency): stage k does term k, or
// passes the accumulator through when k >= terms. `out_valid` follows `in_valid`.
module ipu_amp_lane (
    input  wire         clk,
    input  wire         in_valid,
    input  wire         half,
    input  wire [2:0]   terms,   // 0 to 4
    input  wire [127:0] w,       // term j in bits 32j+31:32j
    input  wire [127:0] x,
    input  wire [31:0]  acc_in,
    output reg          out_valid,
    output reg  [31:0]  acc_out
);
  // Stage k's inputs: the accumulator so far, the terms still to come, which of them run.
  reg         s1_valid, s2_valid, s3_valid;
  reg         s1_half, s2_half, s3_half;
  reg  [31:0] s1_acc, s2_acc, s3_acc;
  reg  [95:0] s1_w, s1_x;
  reg  [63:0] s2_w, s2_x;
  reg  [31:0] s3_w, s3_x;
  reg  [2:0]  s1_run;
  reg  [1:0]  s2_run;
  reg         s3_run;
  wire [3:0]  run = {terms > 3'd3, terms > 3'd2, terms > 3'd1, terms > 3'd0};
  wire [31:0] mac0, mac1, mac2, mac3;

  ipu_fma32 term0 (.half(half), .a(w[31:0]), .b(x[31:0]), .c(acc_in), .y(mac0));
  ipu_fma32 term1 (.half(s1_half), .a(s1_w[31:0]), .b(s1_x[31:0]), .c(s1_acc), .y(mac1));
  ipu_fma32 term2 (.half(s2_half), .a(s2_w[31:0]), .b(s2_x[31:0]), .c(s2_acc), .y(mac2));
  ipu_fma32 term3 (.half(s3_half), .a(s3_w), .b(s3_x), .c(s3_acc), .y(mac3));

  always @(posedge clk) begin
    s1_valid <= in_valid;
    s1_half <= half;
    s1_acc <= run[0] ? mac0 : acc_in;
    s1_w <= w[127:32];
    s1_x <= x[127:32];
    s1_run <= run[3:1];

    s2_valid <= s1_valid;
    s2_half <= s1_half;
    s2_acc <= s1_run[0] ? mac1 : s1_acc;
    s2_w <= s1_w[95:32];
    s2_x <= s1_x[95:32];
    s2_run <= s1_run[2:1];

    s3_valid <= s2_valid;
    s3_half <= s2_half;
    s3_acc <= s2_run[0] ? mac2 : s2_acc;
    s3_w <= s2_w[63:32];
    s3_x <= s2_x[63:32];
    s3_run <= s2_run[1];

    out_valid <= s3_valid;
    acc_out <= s3_run ? mac3 : s3_acc;
  end
endmodule
