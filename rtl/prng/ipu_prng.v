// The tile PRNG: Graphcore's published xoroshiro128aox, one 64-bit output per clock.
//   sx = s0 ^ s1; sa = s0 & s1; out = sx ^ (rotl(sa, 1) | rotl(sa, 2));
//   s0' = rotl(s0, 55) ^ sx ^ (sx << 14); s1' = rotl(sx, 36)
// Equal, output for output, to the C++ model the fast platform uses (hw/tile/prng.h).
// `seed` loads the state (s1 in bits 127:64, s0 in bits 63:0); `step` advances it, and `out`
// is the output of the state as it stood before the step (registered: valid the next cycle).
// `state` shows the current state in the seed layout (the CSRs ipu_prng0..3 read it).
module ipu_prng (
    input  wire         clk,
    input  wire         seed,
    input  wire [127:0] seed_value,
    input  wire         step,
    output reg  [63:0]  out,
    output wire [127:0] state
);
  reg [63:0] s0, s1;
  assign state = {s1, s0};
  wire [63:0] sx = s0 ^ s1;
  wire [63:0] sa = s0 & s1;
  wire [63:0] rotl_sa_1 = {sa[62:0], sa[63]};
  wire [63:0] rotl_sa_2 = {sa[61:0], sa[63:62]};

  always @(posedge clk) begin
    if (seed) begin
      s0 <= seed_value[63:0];
      s1 <= seed_value[127:64];
    end else if (step) begin
      out <= sx ^ (rotl_sa_1 | rotl_sa_2);
      s0 <= {s0[8:0], s0[63:9]} ^ sx ^ {sx[49:0], 14'b0};  // rotl(s0, 55) = rotr(s0, 9)
      s1 <= {sx[27:0], sx[63:28]};                          // rotl(sx, 36)
    end
  end
endmodule
