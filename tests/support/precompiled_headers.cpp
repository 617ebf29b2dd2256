// The program that carries the test drivers' precompiled headers (tests/CMakeLists.txt,
// ipu_test_pch): every test program is compiled with exactly its flags, so each reuses them.
int main() { return 0; }
