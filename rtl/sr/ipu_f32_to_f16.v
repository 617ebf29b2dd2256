// f32 -> f16 conversion of the Xipu f16 instructions (hw/tile/fpu.cpp f32_to_f16): the RISC-V
// modes RNE RTZ RDN RUP RMM and stochastic rounding (rm 8), with the accrued flags
// NX=1 UF=2 OF=4 NV=16, the canonical NaN 0x7e00 and tininess after rounding (before rounding
// under stochastic rounding). Stochastic: with the discarded part as a 32-bit fraction F of the
// last place (truncated), the magnitude rounds up iff F + random >= 2^32.
// Pipelined, one conversion per clock, latency 2: stage 1 aligns the significand and takes the
// rounding decisions; stage 2 assembles the result and flags. `out_valid` follows `in_valid`.
module ipu_f32_to_f16 (
    input  wire        clk,
    input  wire        in_valid,
    input  wire [31:0] a,
    input  wire [3:0]  rm,
    input  wire [31:0] random,
    output reg         out_valid,
    output reg  [15:0] y,
    output reg  [4:0]  flags
);
  localparam [3:0] RNE = 4'd0, RTZ = 4'd1, RDN = 4'd2, RUP = 4'd3, RMM = 4'd4, SR = 4'd8;
  localparam [4:0] NX = 5'd1, UF = 5'd2, OF = 5'd4, NV = 5'd16;

  // Whether the magnitude rounds up, given the kept part's last bit and the discarded part as a
  // 64-bit fraction of the last place (exact: the callers never shift more than 64 bits out).
  function automatic round_up(input [3:0] mode, input negative, input q_lsb,
                              input [63:0] frac, input [31:0] rnd);
    reg above_half, at_half, inexact;
    begin
      above_half = frac[63] && |frac[62:0];
      at_half = frac == 64'h8000_0000_0000_0000;
      inexact = |frac;
      case (mode)
        RNE: round_up = above_half || (at_half && q_lsb);
        RTZ: round_up = 1'b0;
        RDN: round_up = negative && inexact;
        RUP: round_up = !negative && inexact;
        RMM: round_up = frac[63];
        SR: round_up = rnd != 0 && frac[63:32] >= 32'd0 - rnd;  // F + rnd >= 2^32
        default: round_up = 1'b0;
      endcase
    end
  endfunction

  // ---- stage 1: unpack, align, decide ----
  wire        sign = a[31];
  wire [7:0]  exp_field = a[30:23];
  wire [22:0] frac_field = a[22:0];
  wire        is_nan = exp_field == 8'hff && frac_field != 0;
  wire        is_inf = exp_field == 8'hff && frac_field == 0;
  wire        is_zero = exp_field == 0 && frac_field == 0;
  // f32 subnormals are ~2^-126, far below the f16 range: unnormalized is fine, they only need
  // to be non-zero and to land wholly in the discarded part.
  wire [23:0] significand = {exp_field != 0, frac_field};
  wire signed [9:0] e = exp_field == 0 ? -10'sd126 : $signed({2'b0, exp_field}) - 10'sd127;

  // Normal-range rounding: keep 11 significant bits, discard 13.
  wire [9:0]  mantissa_normal = significand[22:13];  // the kept bits below the hidden one
  wire [63:0] frac_normal = {significand[12:0], 51'b0};
  wire        up_normal = round_up(rm, sign, mantissa_normal[0], frac_normal, random);

  // Subnormal-range rounding: discard 13 + (-14 - e) bits, at most 64 (beyond that F is 0 and
  // the result the same). {significand, 51'b0} is the normal alignment; shift it further.
  wire signed [9:0] sub_extra_wide = -10'sd14 - e;
  wire [5:0]  sub_extra = sub_extra_wide > 10'sd51 ? 6'd51 : sub_extra_wide[5:0];
  wire [74:0] sub_aligned = {significand, 51'b0} >> sub_extra;
  wire [10:0] q_sub = sub_aligned[74:64];
  wire [63:0] frac_sub = sub_aligned[63:0];
  wire        up_sub = round_up(rm, sign, q_sub[0], frac_sub, random);

  reg        s1_valid, s1_sign, s1_nan, s1_snan, s1_inf, s1_zero, s1_subnormal, s1_tiny_below;
  reg        s1_up_normal, s1_up_sub, s1_inexact_normal, s1_inexact_sub, s1_to_infinity;
  reg        s1_stochastic;
  reg [9:0]  s1_mantissa_normal;
  reg [10:0] s1_q_sub;
  reg signed [9:0] s1_e;

  always @(posedge clk) begin
    s1_valid <= in_valid;
    s1_sign <= sign;
    s1_nan <= is_nan;
    s1_snan <= is_nan && !frac_field[22];
    s1_inf <= is_inf;
    s1_zero <= is_zero;
    s1_subnormal <= e < -10'sd14;
    s1_tiny_below <= e < -10'sd15;
    s1_e <= e;
    s1_mantissa_normal <= mantissa_normal;
    s1_up_normal <= up_normal;
    s1_inexact_normal <= |frac_normal;
    s1_q_sub <= q_sub;
    s1_up_sub <= up_sub;
    s1_inexact_sub <= |frac_sub;
    s1_stochastic <= rm == SR;
    s1_to_infinity <= rm == RNE || rm == RMM || rm == SR || (rm == RUP && !sign) ||
                      (rm == RDN && sign);
  end

  // ---- stage 2: assemble ----
  wire [10:0] mantissa_rounded = {1'b0, s1_mantissa_normal} + {10'b0, s1_up_normal};
  wire        carry = mantissa_rounded[10];  // rounded up to the next binade, mantissa 0
  wire signed [9:0] e_rounded = s1_e + {9'b0, carry};
  wire [10:0] q_sub_rounded = s1_q_sub + {10'b0, s1_up_sub};  // 0x400: the smallest normal
  // Tininess after rounding: the result rounded with an unbounded exponent is below 2^-14.
  wire        tiny = s1_stochastic || s1_tiny_below || !carry;
  wire [4:0]  biased = e_rounded[4:0] + 5'd15;

  always @(posedge clk) begin
    out_valid <= s1_valid;
    if (s1_nan) begin
      y <= 16'h7e00;
      flags <= s1_snan ? NV : 5'd0;
    end else if (s1_inf) begin
      y <= {s1_sign, 15'h7c00};
      flags <= 5'd0;
    end else if (s1_zero) begin
      y <= {s1_sign, 15'h0};
      flags <= 5'd0;
    end else if (s1_subnormal) begin
      y <= {s1_sign, 4'b0, q_sub_rounded};
      flags <= s1_inexact_sub ? (NX | (tiny ? UF : 5'd0)) : 5'd0;
    end else if (e_rounded > 10'sd15) begin
      y <= {s1_sign, s1_to_infinity ? 15'h7c00 : 15'h7bff};
      flags <= OF | NX;
    end else begin
      y <= {s1_sign, biased, mantissa_rounded[9:0]};
      flags <= s1_inexact_normal ? NX : 5'd0;
    end
  end
endmodule
