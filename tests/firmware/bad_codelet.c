/* A codelet with a compile error, for the SDK's diagnostics test. */
void broken(const void *v) {
  return undefined_variable + v;
}
