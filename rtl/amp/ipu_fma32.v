// Fused multiply-add y = a * b + c in f32 with one rounding, round to nearest even: what C's
// fmaf computes and what the C++ AMP model uses for each MAC (hw/tile/amp.h). Any NaN result is
// the canonical 0x7fc00000 (the AMP writes canonical NaNs only). With `half` set, a and b are
// f16 in bits 15:0 (exact in f32; bits 31:16 ignored), as in the AMP's f16 mode.
// Combinational. The exact product (48 bits) and the addend share an 80-bit window:
//   bit 0 collects addend bits below the window (sticky), the product sits at bits 50:3, and the
//   addend is placed by the exponent difference, at most at bits 77:54; an addend further up
//   makes the product a sticky-like remainder at least 3 bits below its last place, which
//   rounds the same. The sum is normalized, rounded at the normal or subnormal position, and
//   assembled so that a rounding carry moves into the exponent.
module ipu_fma32 (
    input  wire        half,
    input  wire [31:0] a,
    input  wire [31:0] b,
    input  wire [31:0] c,
    output reg  [31:0] y
);
  localparam [31:0] CANONICAL_NAN = 32'h7fc0_0000;

  // Unbiased exponent of an operand's exponent field (f16 or f32 bias; subnormals at the minimum).
  function automatic signed [11:0] exponent(input h, input [7:0] field);
    if (h) exponent = field == 8'd0 ? -12'sd14 : $signed({4'b0, field}) - 12'sd15;
    else exponent = field == 8'd0 ? -12'sd126 : $signed({4'b0, field}) - 12'sd127;
  endfunction
  // Leading zeros by halving steps (a zero input gives the width): 24 bits padded to 32, 80
  // bits padded to 128 with ones below, so the padding never counts.
  function automatic [4:0] leading_zeros24(input [23:0] s);
    reg [31:0] v;
    begin
      v = {s, 8'hff};
      leading_zeros24 = 5'd0;
      if (v[31:16] == 16'd0) begin leading_zeros24[4] = 1'b1; v = v << 16; end
      if (v[31:24] == 8'd0) begin leading_zeros24[3] = 1'b1; v = v << 8; end
      if (v[31:28] == 4'd0) begin leading_zeros24[2] = 1'b1; v = v << 4; end
      if (v[31:30] == 2'd0) begin leading_zeros24[1] = 1'b1; v = v << 2; end
      if (!v[31]) leading_zeros24[0] = 1'b1;
      if (s == 24'd0) leading_zeros24 = 5'd24;
    end
  endfunction
  function automatic [6:0] leading_zeros80(input [79:0] s);
    reg [127:0] v;
    begin
      v = {s, {48{1'b1}}};
      leading_zeros80 = 7'd0;
      if (v[127:64] == 64'd0) begin leading_zeros80[6] = 1'b1; v = v << 64; end
      if (v[127:96] == 32'd0) begin leading_zeros80[5] = 1'b1; v = v << 32; end
      if (v[127:112] == 16'd0) begin leading_zeros80[4] = 1'b1; v = v << 16; end
      if (v[127:120] == 8'd0) begin leading_zeros80[3] = 1'b1; v = v << 8; end
      if (v[127:124] == 4'd0) begin leading_zeros80[2] = 1'b1; v = v << 4; end
      if (v[127:126] == 2'd0) begin leading_zeros80[1] = 1'b1; v = v << 2; end
      if (!v[127]) leading_zeros80[0] = 1'b1;
      if (s == 80'd0) leading_zeros80 = 7'd80;
    end
  endfunction

  // ---- unpack; subnormal significands are normalized (their exponent goes below -126) ----
  // f16 operands in f32 layout: exponent field zero-extended, fraction left-aligned.
  wire [7:0]  a_field = half ? {3'b0, a[14:10]} : a[30:23];
  wire [7:0]  b_field = half ? {3'b0, b[14:10]} : b[30:23];
  wire [22:0] a_fraction = half ? {a[9:0], 13'b0} : a[22:0];
  wire [22:0] b_fraction = half ? {b[9:0], 13'b0} : b[22:0];
  wire        a_sign = half ? a[15] : a[31];
  wire        b_sign = half ? b[15] : b[31];
  wire        c_sign = c[31];
  wire        a_max = half ? &a[14:10] : &a[30:23];
  wire        b_max = half ? &b[14:10] : &b[30:23];
  wire        c_max = &c[30:23];
  wire        a_nan = a_max && a_fraction != 23'd0;
  wire        b_nan = b_max && b_fraction != 23'd0;
  wire        c_nan = c_max && c[22:0] != 23'd0;
  wire        a_inf = a_max && a_fraction == 23'd0;
  wire        b_inf = b_max && b_fraction == 23'd0;
  wire        c_inf = c_max && c[22:0] == 23'd0;
  wire [23:0] a_raw = {a_field != 8'd0, a_fraction};
  wire [23:0] b_raw = {b_field != 8'd0, b_fraction};
  wire [23:0] c_raw = {c[30:23] != 8'd0, c[22:0]};
  wire        a_zero = a_raw == 24'd0;
  wire        b_zero = b_raw == 24'd0;
  wire        c_zero = c_raw == 24'd0;
  wire [4:0]  a_shift = leading_zeros24(a_raw);
  wire [4:0]  b_shift = leading_zeros24(b_raw);
  wire [4:0]  c_shift = leading_zeros24(c_raw);
  wire [23:0] a_sig = a_raw << a_shift;
  wire [23:0] b_sig = b_raw << b_shift;
  wire [23:0] c_sig = c_raw << c_shift;
  wire signed [11:0] a_exp = exponent(half, a_field) - $signed({7'b0, a_shift});
  wire signed [11:0] b_exp = exponent(half, b_field) - $signed({7'b0, b_shift});
  wire signed [11:0] c_exp = exponent(1'b0, c[30:23]) - $signed({7'b0, c_shift});

  // ---- align: product value = product * 2^(a_exp + b_exp - 46), addend = c_sig * 2^(c_exp - 23)
  wire        product_sign = a_sign ^ b_sign;
  wire        product_zero = a_zero || b_zero;
  wire [47:0] product = a_sig * b_sig;
  wire signed [11:0] product_exp = a_exp + b_exp;
  wire signed [11:0] distance = c_exp - product_exp + 12'sd23;  // addend LSB above product LSB
  wire        addend_on_top = product_zero || distance > 12'sd51;
  wire signed [11:0] addend_lsb = addend_on_top ? 12'sd54 : distance + 12'sd3;
  // Window bit k weighs 2^(base + k).
  wire signed [11:0] base = addend_on_top ? c_exp - 12'sd77 : product_exp - 12'sd49;
  wire [79:0] product_window = product_zero ? 80'd0 : {29'b0, product, 3'b0};
  wire [11:0] addend_drop = 12'd0 - addend_lsb;  // bits of the addend below the window
  wire [47:0] addend_low = {c_sig, 24'b0} >> addend_drop[4:0];
  reg  [79:0] addend_window;
  always @* begin
    if (c_zero) addend_window = 80'd0;
    else if (!addend_lsb[11]) addend_window = {56'b0, c_sig} << addend_lsb[6:0];
    else if (addend_drop > 12'd24) addend_window = 80'd1;  // wholly below: sticky
    else addend_window = {56'b0, addend_low[47:25], addend_low[24] | (|addend_low[23:0])};
  end

  // ---- add the magnitudes ----
  wire        subtract = product_sign != c_sign;
  wire        addend_larger = addend_window > product_window;
  wire [79:0] sum = !subtract ? product_window + addend_window
                  : addend_larger ? addend_window - product_window
                  : product_window - addend_window;
  wire        sum_sign = subtract && addend_larger ? c_sign : product_sign;

  // ---- normalize and round: the result's last place goes to window bit 56 ----
  wire [6:0]  sum_zeros = leading_zeros80(sum);
  wire signed [11:0] msb = 12'sd79 - $signed({5'b0, sum_zeros});
  wire signed [11:0] result_exp = msb + base;  // of the leading bit
  wire        subnormal = result_exp < -12'sd126;
  // Left shift that puts the last place at bit 56: normal 79 - msb; subnormal the 2^-149 place.
  wire signed [11:0] left = subnormal ? 12'sd205 + base : $signed({5'b0, sum_zeros});
  wire [11:0] right = 12'd0 - left;
  reg  [79:0] aligned;
  reg         below;  // bits shifted out to the right
  always @* begin
    if (!left[11]) begin
      aligned = sum << left[6:0];
      below = 1'b0;
    end else if (right >= 12'd80) begin
      aligned = 80'd0;
      below = |sum;
    end else begin
      aligned = sum >> right[6:0];
      below = |(sum & ~(80'hffff_ffff_ffff_ffff_ffff << right[6:0]));
    end
  end
  wire [23:0] kept = aligned[79:56];
  wire        guard = aligned[55];
  wire        sticky = |aligned[54:0] || below;
  wire        round_up = guard && (sticky || kept[0]);
  // {biased exponent - 1, 23 bits} + the kept significand with its hidden bit: a subnormal has
  // exponent field 0 and no hidden bit, and a carry out of the significand bumps the exponent.
  wire signed [11:0] biased_minus_one = subnormal ? 12'sd0 : result_exp + 12'sd126;
  wire [35:0] assembled = {1'b0, biased_minus_one[11:0], 23'b0} + {12'b0, kept} + {35'b0, round_up};
  wire        overflow = assembled >= 36'h0_7f80_0000;

  always @* begin
    if (a_nan || b_nan || c_nan || (a_inf && b_zero) || (a_zero && b_inf) ||
        ((a_inf || b_inf) && c_inf && product_sign != c_sign))
      y = CANONICAL_NAN;
    else if (a_inf || b_inf) y = {product_sign, 31'h7f80_0000};
    else if (c_inf) y = {c_sign, 31'h7f80_0000};
    else if (sum == 80'd0) y = {product_sign && c_sign, 31'd0};  // exact zero: +0 unless both -
    else if (overflow) y = {sum_sign, 31'h7f80_0000};
    else y = {sum_sign, assembled[30:0]};
  end
endmodule
