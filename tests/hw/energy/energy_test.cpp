// hw/energy: counts priced with the table, against energies worked out by hand, and the table
// read from a configuration file and refused by name when a value is bad.
#include "hw/energy/energy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "hw/energy/tile_prices.h"
#include "hw/machine/machine_config.h"

namespace ipu::test {
namespace {

using iss::InsnClass;
using ::testing::HasSubstr;

double line(const hw::BlockEnergy& b, const std::string& action) {
  for (const hw::EnergyLine& l : b.lines)
    if (l.action == action) return l.joules;
  ADD_FAILURE() << "no line " << action << " in " << b.block;
  return 0;
}

TEST(Energy, ALoopOfIntegerInstructionsCostsItsCountTimesItsEnergy) {
  hw::MachineConfig m = hw::machine_preset("mk2");
  hw::RunReport run;
  run.clock_hz = m.chip.tile.clock_hz;
  run.cycles = 1'325'000;  // 1 ms
  run.chip_actions.resize(1);
  run.chip_actions[0].instructions[static_cast<size_t>(InsnClass::kInteger)] = 1'000'000;
  const hw::EnergyReport e = hw::price_energy(m, run);
  ASSERT_EQ(e.chips.size(), 1u);
  EXPECT_DOUBLE_EQ(e.seconds, 1e-3);
  // 1e6 x 4 pJ = 4 uJ; static: (1472 x 0.035 W + 10 W) x 1 ms = 61.52 mJ.
  EXPECT_DOUBLE_EQ(line(e.chips[0], "tile.integer"), 4e-6);
  EXPECT_NEAR(e.chips[0].static_joules, 61.52e-3, 1e-12);
  EXPECT_NEAR(e.joules, 4e-6 + 61.52e-3, 1e-12);
  EXPECT_NEAR(e.watts_per_chip(), (4e-6 + 61.52e-3) / 1e-3, 1e-9);
  EXPECT_TRUE(e.gateways.empty());
  EXPECT_TRUE(e.links.lines.empty());  // a PCIe card: no IPU-Links
}

TEST(Energy, ExchangeSyncLinksAndStreamingMemoryArePricedPerBlock) {
  hw::MachineConfig m = hw::machine_preset("m2000");
  m.energy = {};  // the defaults, whatever the preset says
  hw::RunReport run;
  run.clock_hz = m.chip.tile.clock_hz;
  run.cycles = 0;  // dynamic energy alone
  run.chip_actions.resize(4);
  run.chip_actions[1].exchange_bytes = 4096;             // one exchange of 4 KiB to chip 1,
  run.chip_actions[1].exchange_column_bytes = 3 * 4096;  // 3 columns from sender to receiver
  run.chip_actions[1].sync_arrivals = 1472;              // one internal barrier of the whole chip
  run.chip_actions[2].external_syncs = 1;
  run.chip_actions[2].instructions[static_cast<size_t>(InsnClass::kAmpF16)] = 10;
  run.gateway_actions.resize(1);
  run.gateway_actions[0].ddr_bytes = 1000;
  run.gateway_actions[0].host_port_bytes = 10;
  run.ipulinks = 12;
  run.ipulink_bytes = 256;
  const hw::EnergyReport e = hw::price_energy(m, run);
  EXPECT_DOUBLE_EQ(line(e.chips[1], "exchange.byte"), 4096 * 7e-12);
  EXPECT_DOUBLE_EQ(line(e.chips[1], "exchange.distance"), 3 * 4096 * 0.1e-12);
  EXPECT_DOUBLE_EQ(line(e.chips[1], "sync.arrival"), 1472 * 2e-12);
  EXPECT_DOUBLE_EQ(line(e.chips[2], "sync.external"), 200e-12);
  EXPECT_DOUBLE_EQ(line(e.chips[2], "tile.amp-f16-mac"), 640 * 1.8e-12);  // 64 MACs an issue
  EXPECT_DOUBLE_EQ(line(e.gateways[0], "gateway.ddr-byte"), 1000 * 120e-12);
  EXPECT_DOUBLE_EQ(line(e.gateways[0], "gateway.roce-byte"), 10 * 100e-12);
  EXPECT_DOUBLE_EQ(line(e.links, "ipulink.byte"), 256 * 40e-12);
  EXPECT_DOUBLE_EQ(e.links.static_joules, 0);
  EXPECT_NEAR(e.joules,
              4096 * 7e-12 + 3 * 4096 * 0.1e-12 + 1472 * 2e-12 + 200e-12 + 640 * 1.8e-12 +
                  1000 * 120e-12 + 10 * 100e-12 + 256 * 40e-12,
              1e-18);
}

// The static floor of an M2000 over 1 us: 4 chips of 1472 tiles (0.035 W each) and 10 W, a
// gateway of 250 W with 2 DIMMs of 4 W, 12 links of 0.5 W: 246.08 + 258 + 6 W.
TEST(Energy, TheStaticJoulesAreEveryBlocksStaticLine) {
  hw::MachineConfig m = hw::machine_preset("m2000");
  m.energy = {};
  hw::RunReport run;
  run.clock_hz = m.chip.tile.clock_hz;
  run.cycles = 1325;  // 1 us at 1.325 GHz
  run.chip_actions.resize(4);
  run.chip_actions[0].instructions[static_cast<size_t>(InsnClass::kInteger)] = 1000;
  run.gateway_actions.resize(1);
  run.ipulinks = 12;
  const hw::EnergyReport e = hw::price_energy(m, run);
  EXPECT_NEAR(e.static_joules(), 1e-6 * (4 * (1472 * 0.035 + 10) + 250 + 2 * 4 + 12 * 0.5), 1e-15);
  EXPECT_NEAR(e.joules - e.static_joules(), 1000 * 4e-12, 1e-18);
}

TEST(Energy, BowSpendsTheSameEnergyPerOperationAndLessStaticEnergyOnTheSameWork) {
  hw::RunReport mk2, bow;
  for (hw::RunReport* r : {&mk2, &bow}) {
    r->cycles = 1'000'000;
    r->chip_actions.resize(1);
    r->chip_actions[0].instructions[static_cast<size_t>(InsnClass::kAmpF16)] = 1'000'000;
  }
  mk2.clock_hz = hw::machine_preset("mk2").chip.tile.clock_hz;
  bow.clock_hz = hw::machine_preset("bow").chip.tile.clock_hz;
  const hw::EnergyReport a = hw::price_energy(hw::machine_preset("mk2"), mk2);
  const hw::EnergyReport b = hw::price_energy(hw::machine_preset("bow"), bow);
  EXPECT_DOUBLE_EQ(a.chips[0].dynamic_joules, b.chips[0].dynamic_joules);
  EXPECT_NEAR(b.chips[0].static_joules / a.chips[0].static_joules, mk2.clock_hz / bow.clock_hz,
              1e-12);
}

// A tile's timeline charges what price_energy charges its chip: the same prices per class.
TEST(Energy, TilePricesChargeWhatTheChipLinesCharge) {
  const hw::MachineConfig m = hw::machine_preset("mk2");
  iss::ActionCounts a;
  a.instructions[static_cast<size_t>(InsnClass::kInteger)] = 100;   // 100 x 4 pJ
  a.instructions[static_cast<size_t>(InsnClass::kAmpF16)] = 10;     // 640 MACs x 1.8 pJ
  a.instructions[static_cast<size_t>(InsnClass::kAmpF32)] = 2;      // 32 MACs x 7.2 pJ
  a.instructions[static_cast<size_t>(InsnClass::kAmpWeights)] = 3;  // 3 x 40 pJ
  a.sram_read_bytes = 1000, a.sram_written_bytes = 10;              // 0.8 and 1.0 pJ/B
  const double by_hand = 400 + 640 * 1.8 + 32 * 7.2 + 120 + 800 + 10;
  EXPECT_NEAR(hw::tile_prices(m.energy).pj(a), by_hand, 1e-9);
  hw::RunReport run;
  run.clock_hz = m.chip.tile.clock_hz;
  run.chip_actions.resize(1);
  run.chip_actions[0].instructions = a.instructions;
  run.chip_actions[0].sram_read_bytes = a.sram_read_bytes;
  run.chip_actions[0].sram_written_bytes = a.sram_written_bytes;
  EXPECT_NEAR(hw::price_energy(m, run).chips[0].dynamic_joules, by_hand * 1e-12, 1e-21);
}

// One superstep: its tiles' energy, 1 KiB exchanged 5 columns apart, an internal barrier of 64
// tiles, over
// 1000 cycles of one Mk2 chip; then the same as an external barrier of 4 chips.
TEST(Energy, ASuperstepIsItsActionsPlusItsChipsStaticPowerOverItsSpan) {
  const hw::MachineConfig m = hw::machine_preset("m2000");
  hw::SuperstepActions step;
  step.tile_pj = 5000;
  step.exchange_bytes = 1024;
  step.exchange_column_bytes = 5 * 1024;  // 5 columns apart
  step.arrivals = 64;
  step.chips = 1;
  step.seconds = 1000 / m.chip.tile.clock_hz;
  hw::SuperstepEnergy e = hw::price_superstep(m, step);
  // 5000 + 1024 x 7 + 5120 x 0.1 + 64 x 2 pJ; (1472 x 0.035 + 10) W x 1000 cycles.
  EXPECT_NEAR(e.dynamic_joules, (5000 + 7168 + 512 + 128) * 1e-12, 1e-21);
  EXPECT_NEAR(e.static_joules, 61.52 * 1000 / 1.325e9, 1e-15);
  EXPECT_NEAR(e.watts(), e.joules() / (1000 / 1.325e9), 1e-9);
  step.arrivals = 0, step.external_chips = 4, step.chips = 4;
  e = hw::price_superstep(m, step);
  EXPECT_NEAR(e.dynamic_joules, (5000 + 7168 + 512 + 4 * 200) * 1e-12, 1e-21);
  EXPECT_NEAR(e.static_joules, 4 * 61.52 * 1000 / 1.325e9, 1e-15);
}

TEST(Energy, TheTableIsReadFromAConfigurationFileAndBadValuesAreRefusedByName) {
  const std::string path = ::testing::TempDir() + "energy.cfg";
  {
    std::ofstream f(path);
    f << "energy.tile.integer = 2.5\nenergy.chip.static = 0\n";
  }
  const hw::MachineConfig m = hw::configure_machine("mk2", path, {});
  EXPECT_DOUBLE_EQ(m.energy.integer_pj, 2.5);
  EXPECT_DOUBLE_EQ(m.energy.chip_static_w, 0);
  EXPECT_THAT(
      [] {
        hw::configure_machine("mk2", "", {{"energy.tile.fpu", "-1"}});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("energy.tile.fpu must be 0 to 1000000, not -1")));
  EXPECT_THAT(
      [] {
        hw::configure_machine("mk2", "", {{"energy.tile.fpu", "cheap"}});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("bad value 'cheap' for energy.tile.fpu")));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ipu::test
