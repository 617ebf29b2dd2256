/* Dereferences a null pointer: address 0 is unmapped on the tile, so the load traps. */
int main(void) {
  volatile int *p = 0;
  return *p;
}
