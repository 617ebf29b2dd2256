// A tile's exchange receive mux (hw/exchange/exchange.h): each cycle it takes the word of the
// one sender the tile listens to and writes it at the next place of the receive buffer, with
// the schedule checks of the C++ model as error flags. One clock per exchange cycle:
//   - `valid`/`data` carry the words arriving in this cycle, one per sender (data bits
//     32s+31:32s from sender s); `late` says the cycle is at or after the tile's boundary.
//   - the outputs describe this cycle: `write` a word lands at `write_address`; or flags:
//     late_arrival (any word, late), wrong_source (a word from a tile not selected, or with no
//     tile selected), no_buffer / overrun (the selected word finds no buffer, or a full one).
//   - `select_write` and `buffer_write` (the tile's ipu.xsel / ipu.xbuf) take effect from the
//     next clock; either `buffer_write` or `close` (the boundary) ends the current buffer, and
//     `short_buffer` says it was left short (with `filled` of `buffer_words` words).
// `start` clears the state for the next receiver or phase.
module ipu_exchange_rx #(
    parameter integer SENDERS = 4096,
    parameter integer ID_BITS = 12
) (
    input  wire                  clk,
    input  wire                  start,
    input  wire                  select_write,
    input  wire                  select_none,
    input  wire [ID_BITS-1:0]    select_tile,
    input  wire                  buffer_write,
    input  wire [31:0]           buffer_address_in,
    input  wire [31:0]           buffer_words_in,
    input  wire                  close,
    input  wire                  late,
    input  wire [SENDERS-1:0]    valid,
    input  wire [32*SENDERS-1:0] data,
    output wire                  write,
    output wire [31:0]           write_address,
    output wire [31:0]           write_data,
    output wire                  late_arrival,
    output wire                  wrong_source,
    output wire                  no_buffer,
    output wire                  overrun,
    output wire                  short_buffer,
    output reg  [31:0]           buffer_address,
    output reg  [31:0]           buffer_words,
    output reg  [31:0]           filled
);
  reg               listening;  // a tile is selected
  reg [ID_BITS-1:0] source;
  reg               has_buffer;

  reg [SENDERS-1:0] others;  // senders with a word this cycle, the selected one left out
  always @* begin
    others = valid;
    if (listening) others[source] = 1'b0;
  end
  wire hit = listening && valid[source];  // the selected sender's word is here
  assign late_arrival = late && |valid;
  assign wrong_source = !late && |others;
  assign no_buffer = !late && hit && !has_buffer;
  assign overrun = !late && hit && has_buffer && filled == buffer_words;
  assign write = !late && hit && has_buffer && filled != buffer_words;
  assign write_address = buffer_address + {filled[29:0], 2'b00};
  assign write_data = data[32*source+:32];
  wire [31:0] filled_next = filled + {31'b0, write};
  assign short_buffer = (buffer_write || close) && has_buffer && filled_next != buffer_words;

  always @(posedge clk) begin
    if (start) begin
      listening <= 1'b0;
      source <= {ID_BITS{1'b0}};
      has_buffer <= 1'b0;
      buffer_address <= 32'd0;
      buffer_words <= 32'd0;
      filled <= 32'd0;
    end else begin
      if (select_write) begin
        listening <= !select_none;
        source <= select_tile;
      end
      if (buffer_write) begin
        has_buffer <= 1'b1;
        buffer_address <= buffer_address_in;
        buffer_words <= buffer_words_in;
        filled <= 32'd0;
      end else begin
        if (close) has_buffer <= 1'b0;
        filled <= filled_next;
      end
    end
  end
endmodule
