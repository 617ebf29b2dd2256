// The packer as a command: packs a sequence-length histogram (a "length,count" file, such as the
// published ones in examples/bert/data/) into rows by SPFHP and prints what packing buys.
//
//   bert_pack [--histogram FILE] [--max-per-pack N] [--seq N] [--strategies N]
//
// --seq rescales the lengths to rows of N tokens (as the BERT example's data does); the rows
// are the histogram's longest length otherwise. Exit status: 0, 1 for a bad file, 2 for bad
// options.
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <string>

#include "examples/bert/packing.h"
#include "sdk/tools/parse_count.h"

namespace {

namespace po = boost::program_options;
using ipu::examples::bert::LengthHistogram;
using ipu::examples::bert::Packing;

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void print(const std::string& source, const LengthHistogram& histogram, const Packing& packing,
           unsigned strategies, double seconds) {
  unsigned shortest = 0;
  while (shortest < histogram.max_length() && histogram.count[shortest] == 0) ++shortest;
  fmt::print("histogram    {}: {} sequences of {} to {} tokens, mean {:.2f}\n", source,
             with_commas(histogram.sequences()), shortest + 1, histogram.max_length(),
             static_cast<double>(histogram.tokens()) / static_cast<double>(histogram.sequences()));
  fmt::print("packing      SPFHP into rows of {} tokens, at most {} a row\n", packing.row_length,
             packing.max_per_pack == 1 ? std::string("1 sequence")
                                       : fmt::format("{} sequences", packing.max_per_pack));
  fmt::print("rows         {} ({} ways to fill a row); padded, {}\n", with_commas(packing.rows),
             packing.strategies.size(), with_commas(packing.sequences));
  fmt::print("efficiency   {:.3f} % of the row tokens are real; padded, {:.3f} %\n",
             100.0 * packing.efficiency(), 100.0 / histogram.padding_ratio());
  fmt::print("speed-up     {:.4f}x over padding; the theoretical limit {:.4f}x\n",
             packing.speedup(), histogram.padding_ratio());
  if (strategies > 0) {
    std::vector<const ipu::examples::bert::PackStrategy*> top;
    for (const auto& s : packing.strategies) top.push_back(&s);
    std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->rows > b->rows; });
    fmt::print("\n{:>12}  {:>6}  lengths\n", "rows", "tokens");
    for (size_t i = 0; i < top.size() && i < strategies; ++i)
      fmt::print("{:>12}  {:>6}  {}\n", with_commas(top[i]->rows), top[i]->tokens(),
                 fmt::join(top[i]->lengths, " + "));
  }
  fmt::print("host         {:.3f} s\n", seconds);
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("Options");
  options.add_options()("help,h", "print this help and exit")(
      "histogram", po::value<std::string>()->default_value(IPU_BERT_DATA_DIR "/wikipedia_512.csv"),
      "a 'length,count' file of sequence lengths")(
      "max-per-pack", po::value<std::string>()->default_value("3"), "sequences a row, at most")(
      "seq", po::value<std::string>()->default_value("0"),
      "tokens a row, the lengths rescaled to it (0: the histogram's longest length)")(
      "strategies", po::value<std::string>()->default_value("0"),
      "list the N commonest ways to fill a row");
  const char* usage =
      "usage: bert_pack [--histogram FILE] [--max-per-pack N] [--seq N] [--strategies N]\n";
  po::variables_map vm;
  unsigned max_per_pack = 0, seq = 0, strategies = 0;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << usage << options;
      return 0;
    }
    max_per_pack = static_cast<unsigned>(
        ipu::sdk::parse_count("--max-per-pack", vm["max-per-pack"].as<std::string>(), 1, 64));
    seq = static_cast<unsigned>(
        ipu::sdk::parse_count("--seq", vm["seq"].as<std::string>(), 0, 65536));
    strategies = static_cast<unsigned>(
        ipu::sdk::parse_count("--strategies", vm["strategies"].as<std::string>(), 0, 1000000));
  } catch (const std::exception& e) {
    std::cerr << "bert_pack: " << e.what() << "\n" << usage;
    return 2;
  }
  try {
    const std::string path = vm["histogram"].as<std::string>();
    const auto start = std::chrono::steady_clock::now();
    LengthHistogram histogram = ipu::examples::bert::read_histogram(path);
    if (histogram.sequences() == 0)
      throw std::invalid_argument(fmt::format("{}: every count is 0", path));
    if (seq != 0) histogram = ipu::examples::bert::scale_histogram(histogram, seq);
    const Packing packing = ipu::examples::bert::pack_spfhp(histogram, max_per_pack);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print(path, histogram, packing, strategies, seconds);
  } catch (const std::exception& e) {
    std::cerr << "bert_pack: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
