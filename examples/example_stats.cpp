#include <fstream>
#include <nlohmann/json.hpp>

#include "examples/example_options.h"

namespace ipu::examples {

void record_model_flops(const std::string& stats, double flops) {
  if (stats.empty()) return;
  nlohmann::ordered_json json;
  {
    std::ifstream in(stats);
    json = nlohmann::ordered_json::parse(in);  // the device wrote it: a parse error is a bug
  }
  auto& summary = json["summary"];
  summary["model_flops"] = flops;
  const double seconds = summary.value("seconds", 0.0);
  summary["model_tflops"] = seconds > 0 ? flops / seconds / 1e12 : 0.0;
  std::ofstream out(stats);
  out << json.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + stats);
}

}  // namespace ipu::examples
