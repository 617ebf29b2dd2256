// virtual_ipu._core's SDK half: graphs, tensors, codelets, vertices, programs, the operator
// library and the compiler, bound as the C++ SDK declares them (sdk/graph/graph.h,
// sdk/compiler/compiler.h, sdk/ops/matmul.h). The Device runs in a child process
// (device_server.h); python/virtual_ipu/sdk.py gives all of it NumPy's dtypes and shapes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "python/src/device_server.h"
#include "sdk/compiler/compiler.h"
#include "sdk/graph/graph.h"
#include "sdk/ops/matmul.h"

namespace py = pybind11;

namespace ipu::python {
namespace {

sdk::DType dtype_of(const std::string& name) {
  for (const sdk::DType t :
       {sdk::DType::kF32, sdk::DType::kF16, sdk::DType::kI32, sdk::DType::kU32, sdk::DType::kU8})
    if (name == sdk::dtype_name(t)) return t;
  throw std::invalid_argument("unknown element type '" + name + "' (f32, f16, i32, u32 or u8)");
}

sdk::FieldKind field_kind(const std::string& name) {
  if (name == "input") return sdk::FieldKind::kInput;
  if (name == "output") return sdk::FieldKind::kOutput;
  if (name == "inout") return sdk::FieldKind::kInOut;
  if (name == "scalar") return sdk::FieldKind::kScalar;
  throw std::invalid_argument("unknown field kind '" + name + "' (input, output, inout or scalar)");
}

sdk::CollectiveOp collective_op(const std::string& name) {
  if (name == "sum") return sdk::CollectiveOp::kSum;
  if (name == "mean") return sdk::CollectiveOp::kMean;
  if (name == "max") return sdk::CollectiveOp::kMax;
  throw std::invalid_argument("unknown collective op '" + name + "' (sum, mean or max)");
}

}  // namespace

void bind_sdk(py::module_& m) {
  using namespace ipu::sdk;
  py::register_exception<GraphError>(m, "GraphError", PyExc_ValueError);
  py::register_exception<CompileError>(m, "CompileError", PyExc_RuntimeError);

  py::class_<Target>(m, "Target")
      .def(py::init([](const hw::MachineConfig& machine, unsigned tiles, unsigned replicas) {
             return Target::of(machine, tiles, replicas);
           }),
           py::arg("machine"), py::arg("tiles"), py::arg("replicas"))
      .def_readonly("replicas", &Target::replicas)
      .def_property_readonly("replica_tiles", &Target::replica_tiles);

  py::class_<Tensor>(m, "Tensor").def_readonly("id", &Tensor::id);
  py::class_<ComputeSet>(m, "ComputeSet").def_readonly("id", &ComputeSet::id);
  py::class_<RemoteBuffer>(m, "RemoteBuffer");
  py::class_<Region>(m, "Region")
      .def_readonly("begin", &Region::begin)
      .def_readonly("end", &Region::end)
      .def_readonly("tensor", &Region::tensor);
  py::class_<Program>(m, "Program");

  py::class_<Graph>(m, "Graph")
      .def(py::init<Target>(), py::arg("target"))
      .def_property_readonly("tiles", &Graph::tiles)
      .def_property_readonly("replicas", &Graph::replicas)
      .def("tile", &Graph::tile, py::arg("chip"), py::arg("tile"))
      .def(
          "add_variable",
          [](Graph& g, const std::string& name, std::vector<size_t> shape,
             const std::string& type) {
            return g.add_variable(dtype_of(type), std::move(shape), name);
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype"))
      .def(
          "add_constant",
          [](Graph& g, const std::string& name, std::vector<size_t> shape, const std::string& type,
             const py::bytes& data) {
            const std::string bytes = data;
            size_t elements = 1;
            for (const size_t d : shape) elements *= d;
            if (bytes.size() != elements * dtype_size(dtype_of(type)))
              throw std::invalid_argument("constant " + name + ": " + std::to_string(bytes.size()) +
                                          " bytes for " + std::to_string(elements) + " elements");
            return g.add_constant(dtype_of(type), std::move(shape), bytes.data(), name);
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype"), py::arg("data"))
      .def("set_tile_mapping", py::overload_cast<Tensor, unsigned>(&Graph::set_tile_mapping),
           py::arg("tensor"), py::arg("tile"))
      .def(
          "set_intervals",
          [](Graph& g, Tensor t, const std::vector<std::tuple<size_t, size_t, unsigned>>& pieces) {
            std::vector<Interval> mapping;
            for (const auto& [begin, end, tile] : pieces) mapping.push_back({begin, end, tile});
            g.set_tile_mapping(t, std::move(mapping));
          },
          py::arg("tensor"), py::arg("intervals"))
      .def("map_evenly", py::overload_cast<Tensor, unsigned, unsigned, size_t>(&Graph::map_evenly),
           py::arg("tensor"), py::arg("first"), py::arg("count"), py::arg("grain") = 1)
      .def("region", py::overload_cast<Tensor, size_t, size_t>(&Graph::region, py::const_),
           py::arg("tensor"), py::arg("begin"), py::arg("end"))
      .def("whole", py::overload_cast<Tensor>(&Graph::region, py::const_), py::arg("tensor"))
      .def(
          "add_codelet",
          [](Graph& g, const std::string& name, const std::string& path,
             const std::vector<std::tuple<std::string, std::string, std::string>>& fields) {
            std::vector<Field> list;
            for (const auto& [field, kind, type] : fields)
              list.push_back({field, field_kind(kind), dtype_of(type)});
            g.add_codelet(name, path, std::move(list));
          },
          py::arg("name"), py::arg("path"), py::arg("fields"))
      .def("add_compute_set", &Graph::add_compute_set, py::arg("name"))
      .def(
          "add_vertex",
          [](Graph& g, ComputeSet cs, const std::string& codelet, unsigned tile,
             const std::map<std::string, std::variant<Region, uint32_t>>& fields,
             unsigned workers) { g.add_vertex(cs, codelet, tile, fields, workers); },
          py::arg("compute_set"), py::arg("codelet"), py::arg("tile"), py::arg("fields"),
          py::arg("workers") = 1)
      .def(
          "add_host_stream",
          [](Graph& g, const std::string& name, const std::string& type, size_t elements,
             bool to_device) {
            g.add_host_stream(
                name, dtype_of(type), elements,
                to_device ? StreamDirection::kHostToDevice : StreamDirection::kDeviceToHost);
          },
          py::arg("name"), py::arg("dtype"), py::arg("elements"), py::arg("to_device"))
      .def(
          "add_remote_buffer",
          [](Graph& g, const std::string& name, const std::string& type, size_t elements,
             unsigned entries) {
            return g.add_remote_buffer(name, dtype_of(type), elements, entries);
          },
          py::arg("name"), py::arg("dtype"), py::arg("elements"), py::arg("entries"))
      .def("tensor_info", [](const Graph& g, Tensor t) {
        const TensorInfo& i = g.tensor(t);
        return py::make_tuple(i.name, dtype_name(i.type), i.shape);
      });

  m.def("Sequence", &Sequence, py::arg("steps"));
  m.def("Execute", &Execute, py::arg("compute_set"));
  m.def("Copy", py::overload_cast<Tensor, Tensor>(&Copy), py::arg("source"),
        py::arg("destination"));
  m.def("CopyRegions", py::overload_cast<std::vector<std::pair<Region, Region>>>(&Copy),
        py::arg("pairs"));
  m.def("Broadcast", &Broadcast, py::arg("source"), py::arg("destination"));
  m.def("Repeat", &Repeat, py::arg("count"), py::arg("body"));
  m.def("Sync", [] { return Sync(); });
  m.def("HostWrite", &HostWrite, py::arg("stream"), py::arg("destination"));
  m.def("HostRead", &HostRead, py::arg("source"), py::arg("stream"));
  m.def("CrossReplicaCopy", &CrossReplicaCopy, py::arg("source"), py::arg("destination"),
        py::arg("replica_map"));
  m.def(
      "AllReduce", [](Tensor t, const std::string& op) { return AllReduce(t, collective_op(op)); },
      py::arg("data"), py::arg("op"));
  m.def(
      "ReduceScatter",
      [](Tensor t, Tensor out, const std::string& op) {
        return ReduceScatter(t, out, collective_op(op));
      },
      py::arg("data"), py::arg("out"), py::arg("op"));
  m.def(
      "AllGather", [](Tensor in, Tensor out) { return AllGather(in, out); }, py::arg("data"),
      py::arg("out"));
  m.def("CopyToRemote", &CopyToRemote, py::arg("source"), py::arg("buffer"), py::arg("entry"));
  m.def("CopyFromRemote", &CopyFromRemote, py::arg("buffer"), py::arg("entry"),
        py::arg("destination"));

  // C = A x B appended to `program` (a Sequence), as ops::matmul plans and lays it out.
  m.def(
      "matmul",
      [](Graph& g, Program& program, Tensor a, Tensor b, bool transpose_a, bool transpose_b,
         double available_memory_proportion, const std::string& output, const std::string& name) {
        ops::MatmulOptions options;
        options.transpose_a = transpose_a, options.transpose_b = transpose_b;
        options.available_memory_proportion = available_memory_proportion;
        options.output = dtype_of(output);
        options.name = name;
        return ops::matmul(g, program, a, b, options);
      },
      py::arg("graph"), py::arg("program"), py::arg("a"), py::arg("b"), py::arg("transpose_a"),
      py::arg("transpose_b"), py::arg("available_memory_proportion"), py::arg("output"),
      py::arg("name"));

  py::class_<Executable, std::shared_ptr<Executable>>(m, "Executable")
      .def_property_readonly("programs",
                             [](const Executable& e) {
                               std::vector<std::string> names;
                               for (const ProgramInfo& p : e.programs) names.push_back(p.name);
                               return names;
                             })
      .def_property_readonly("streams",
                             [](const Executable& e) {
                               py::dict out;
                               for (const auto& [name, s] : e.streams)
                                 out[py::str(name)] =
                                     py::make_tuple(dtype_name(s.type), s.elements,
                                                    s.direction == StreamDirection::kHostToDevice);
                               return out;
                             })
      .def_property_readonly("remote_buffers",
                             [](const Executable& e) {
                               py::dict out;
                               for (const auto& [name, r] : e.remote_buffers)
                                 out[py::str(name)] = py::make_tuple(
                                     dtype_name(r.info.type), r.info.elements, r.info.entries);
                               return out;
                             })
      .def_property_readonly("tensors",
                             [](const Executable& e) {
                               py::dict out;
                               for (const auto& [name, t] : e.tensor_info)
                                 out[py::str(name)] = py::make_tuple(dtype_name(t.type), t.shape);
                               return out;
                             })
      .def_readonly("replicas", &Executable::replicas)
      .def_readonly("memory_report", &Executable::memory_report);

  m.def(
      "compile",
      [](const Graph& g, const std::vector<std::pair<std::string, Program>>& programs) {
        std::vector<NamedProgram> named;
        for (const auto& [name, program] : programs) named.push_back({name, program});
        py::gil_scoped_release release;  // the cross compiler runs a while
        return std::make_shared<Executable>(sdk::compile(g, named));
      },
      py::arg("graph"), py::arg("programs"));

  // A Device in a child process: call(header JSON, blobs) -> (reply JSON, blobs).
  py::class_<DeviceClient>(m, "DeviceClient")
      .def(py::init([](std::shared_ptr<Executable> executable,
                       const std::map<std::string, std::string>& options) {
             auto client = std::make_unique<DeviceClient>(std::move(executable), options);
             return client;
           }),
           py::arg("executable"), py::arg("options"))
      .def(
          "call",
          [](DeviceClient& d, const std::string& header, const std::vector<py::bytes>& blobs) {
            std::vector<std::string> in(blobs.begin(), blobs.end());
            std::pair<std::string, std::vector<std::string>> reply;
            {
              py::gil_scoped_release release;
              reply = d.call(header, in, [] {
                py::gil_scoped_acquire acquire;
                if (PyErr_CheckSignals() != 0) throw py::error_already_set();
              });
            }
            py::list out;
            for (const std::string& b : reply.second) out.append(py::bytes(b));
            return py::make_tuple(reply.first, out);
          },
          py::arg("header"), py::arg("blobs"))
      .def("close", &DeviceClient::close);
}

}  // namespace ipu::python
