#include "codelet_library.h"

#include "sdk/graph/sdk_paths.h"

namespace ipu::sdk {

void add_codelet_library(Graph& g) {
  const std::string dir = sdk_paths().codelet_dir();
  auto in = [](const char* n, DType t) { return Field{n, FieldKind::kInput, t}; };
  auto out = [](const char* n, DType t) { return Field{n, FieldKind::kOutput, t}; };
  auto inout = [](const char* n, DType t) { return Field{n, FieldKind::kInOut, t}; };
  auto scalar = [](const char* n) { return Field{n, FieldKind::kScalar, DType::kU32}; };
  const DType f32 = DType::kF32;
  g.add_codelet("add_f32", dir + "/elementwise.c",
                {in("a", f32), in("b", f32), out("out", f32), scalar("n")});
  g.add_codelet("add_f32_workers", dir + "/elementwise.c",
                {in("a", f32), in("b", f32), out("out", f32), scalar("n")});
  g.add_codelet("scale_add_f32", dir + "/elementwise.c",
                {in("a", f32), inout("out", f32), scalar("n"), scalar("k")});
  g.add_codelet("sum_f32", dir + "/elementwise.c", {in("a", f32), out("out", f32), scalar("n")});
  g.add_codelet("sum_rows_f32", dir + "/mlp.c",
                {in("in", f32), out("out", f32), scalar("rows"), scalar("n")});
  g.add_codelet("sgd_f32", dir + "/mlp.c",
                {inout("params", f32), in("g", f32), scalar("n"), scalar("k")});
  g.add_codelet("record_f32", dir + "/mlp.c",
                {inout("history", f32), in("value", f32), inout("count", DType::kU32)});
  g.add_codelet(
      "matmul_f16_amp", dir + "/matmul.c",
      {in("a", DType::kF16), in("b", DType::kF16), out("ct", f32), scalar("k"), scalar("columns")});
}

}  // namespace ipu::sdk
