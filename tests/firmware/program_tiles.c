// Every tile exits with the number of tiles of its chip that have a program (ipu-sim's exit
// status): an image for tiles 0, 64 and 128 exits with 3 on a chip of 1472 tiles.
#include "ipu.h"

int main(void) { return (int)ipu_program_tile_count(); }
