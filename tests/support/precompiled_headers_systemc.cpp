// The program that carries the SystemC test drivers' precompiled headers (tests/CMakeLists.txt,
// ipu_test_pch_systemc), linked with SystemC as they are: its main() calls this.
int sc_main(int, char**) { return 0; }
