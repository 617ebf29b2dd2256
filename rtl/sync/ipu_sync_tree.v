// The sync network's barrier (hw/sync/sync_network.h): per-tile arrive signals, the group's
// member mask (group 0: every tile with a program; GSP groups: subsets), and the release
// `latency` cycles after the last member's arrival, as the C++ model's
// release = last arrival + sync.internal-cycles.
// A tile's `arrive` bit is high in its arrival cycle. Arrivals gather in nodes of 64 tiles
// (the tree's leaves) and the root ANDs the nodes: the barrier is complete in the cycle its
// last member arrives. `released` is high in exactly one
// cycle: `latency` cycles after that one (in the same cycle for latency 0). `start` clears the
// barrier for the next one (mask and latency are held steady while it runs). `stray` latches an
// arrival from a tile outside the mask.
module ipu_sync_tree #(
    parameter integer TILES = 4096
) (
    input  wire             clk,
    input  wire             start,
    input  wire [TILES-1:0] mask,
    input  wire [31:0]      latency,
    input  wire [TILES-1:0] arrive,
    output wire             released,
    output reg              stray
);
  localparam integer NODES = (TILES + 63) / 64;

  reg  [TILES-1:0] arrived;
  reg              counting, done;
  reg  [31:0]      count;  // cycles since the completing arrival, while counting

  // Leaves: a node is satisfied when each of its members has arrived (now or before).
  wire [TILES-1:0] satisfied = arrived | arrive | ~mask;
  wire [NODES-1:0] node_complete;
  genvar n;
  generate
    for (n = 0; n < NODES; n = n + 1) begin : node
      localparam integer LAST = (n + 1) * 64 > TILES ? TILES - 1 : (n + 1) * 64 - 1;
      assign node_complete[n] = &satisfied[LAST:n*64];
    end
  endgenerate
  wire complete = &node_complete;

  assign released = !done && (counting ? count == latency : complete && latency == 32'd0);

  always @(posedge clk) begin
    if (start) begin
      arrived <= {TILES{1'b0}};
      counting <= 1'b0;
      done <= 1'b0;
      count <= 32'd0;
      stray <= 1'b0;
    end else begin
      arrived <= arrived | arrive;
      if (|(arrive & ~mask)) stray <= 1'b1;
      if (released) begin
        counting <= 1'b0;
        done <= 1'b1;
      end else if (counting) begin
        count <= count + 32'd1;
      end else if (complete && !done) begin
        counting <= 1'b1;
        count <= 32'd1;
      end
    end
  end
endmodule
