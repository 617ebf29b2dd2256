// virtual_ipu._core: what the Python package (python/virtual_ipu) is built on. A machine's
// configuration through the same parameter lists ipu-sim and its files use, runs of firmware
// images (each in a child process: forked_run.h), and the HTML run report.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "base/parameters.h"
#include "hw/machine/machine_config.h"
#include "python/src/forked_run.h"
#include "report/html_report.h"
#include "sdk/image/elf_reader.h"

namespace py = pybind11;

// SystemC's library refers to sc_main (its own main() would call it); Python owns main, and the
// runs construct the platform without it.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char**) { return 0; }

namespace ipu::python {
namespace {

// A parameter's value as Python holds it: bool, int, float, str, None for an optional value
// without one, and a value with a text form of its own (sync groups) as its text.
template <typename T>
py::object to_python(const T& value) {
  if constexpr (base::has_text_form<T>::value)
    return py::str(value.text());
  else if constexpr (base::is_optional<T>::value)
    return value ? to_python(*value) : py::none();
  else if constexpr (std::is_same_v<T, std::string>)
    return py::str(value);
  else if constexpr (std::is_same_v<T, bool>)
    return py::bool_(value);
  else if constexpr (std::is_integral_v<T>)
    return py::int_(value);
  else
    return py::float_(value);
}

// Every parameter of `config`: (name, value, unit, meaning, low, high), in the list's order.
template <typename Config>
py::list parameter_rows(const Config& config) {
  py::list rows;
  visit_parameters(config, [&](const base::Parameter& p, const auto& member) {
    rows.append(py::make_tuple(p.name, to_python(member), p.unit, p.meaning, p.low, p.high));
  });
  return rows;
}

template <typename Config>
py::object parameter_value(const Config& config, const std::string& name) {
  py::object out;
  std::vector<std::string> names;
  visit_parameters(config, [&](const base::Parameter& p, const auto& member) {
    names.emplace_back(p.name);
    if (name == p.name) out = to_python(member);
  });
  if (!out) throw std::invalid_argument(base::unknown_parameter_message(name, names));
  return out;
}

hw::RunOptions run_options(const std::map<std::string, std::string>& given) {
  hw::RunOptions options;
  for (const auto& [name, text] : given) base::set_parameter(options, name, text);
  hw::validate(options);
  return options;
}

}  // namespace
}  // namespace ipu::python

namespace ipu::python {
void bind_sdk(py::module_& m);  // sdk_binding.cpp
}

PYBIND11_MODULE(_core, m) {
  using ipu::hw::MachineConfig;
  using namespace ipu::python;
  m.doc() = "The virtual IPU's C++ core; use the virtual_ipu package instead.";

  // ImageError (a corrupt or unreadable image) keeps its own name in Python.
  py::register_exception<ipu::sdk::ImageError>(m, "ImageError", PyExc_ValueError);

  m.def("preset_names", &ipu::hw::machine_preset_names);

  py::class_<MachineConfig>(m, "Config")
      .def(py::init(&ipu::hw::machine_preset), py::arg("preset"))
      // The preset, then the file (whose "preset =" line starts it from that one instead).
      .def_static(
          "load",
          [](const std::string& path, const std::string& preset) {
            return ipu::hw::configure_machine(preset, path, {});
          },
          py::arg("path"), py::arg("preset"))
      .def_readonly("preset", &MachineConfig::preset)
      .def("set", &ipu::base::set_parameter<MachineConfig>, py::arg("name"), py::arg("text"))
      .def("get", &parameter_value<MachineConfig>, py::arg("name"))
      .def("parameters", &parameter_rows<MachineConfig>)
      .def("validate", [](const MachineConfig& c) { ipu::hw::validate(c); })
      .def("dump", [](const MachineConfig& c) {
        std::ostringstream out;
        ipu::hw::write_machine_config(out, c);
        return out.str();
      });

  ipu::python::bind_sdk(m);

  m.def("run_option_parameters", [] { return parameter_rows(ipu::hw::RunOptions{}); });

  // Runs a firmware image in a child process with the GIL released; Ctrl-C (any Python signal
  // handler that raises) kills the child and raises here.
  m.def(
      "run",
      [](const MachineConfig& machine, const std::string& image,
         const std::map<std::string, std::string>& options, bool records) {
        RunRequest request{machine, run_options(options), image, records};
        ipu::hw::validate(request.machine);
        py::gil_scoped_release release;
        return run_in_child(request, [] {
          py::gil_scoped_acquire acquire;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        });
      },
      py::arg("machine"), py::arg("image"), py::arg("options"), py::arg("records"));

  m.def(
      "html_report",
      [](const std::string& stats, const std::string& title) {
        std::ostringstream out;
        ipu::report::write_html_report(out, stats, title);
        return out.str();
      },
      py::arg("stats"), py::arg("title"));
}
