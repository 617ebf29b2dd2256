// main() of the GoogleTest programs whose tests run SystemC modules (ipu_test(... SYSTEMC)):
// the tests run inside sc_main, where SystemC allows elaboration and sc_start.
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int, char**) { return RUN_ALL_TESTS(); }
