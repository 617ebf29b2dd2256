// base/parameters.h: one declaration of a struct's parameters gives parsing, writing, range
// checks and the errors that name the parameter and the text.
#include "base/parameters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ipu::test {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A value with a text form of its own, as tlm_rtl::RtlSelection has.
struct Colours {
  bool red = false, blue = false;
  static Colours parse(const std::string& text) {
    if (text == "red") return {true, false};
    if (text == "blue") return {false, true};
    if (text == "both") return {true, true};
    if (text == "none") return {};
    throw std::invalid_argument("unknown colour '" + text + "'");
  }
  std::string text() const { return red && blue ? "both" : red ? "red" : blue ? "blue" : "none"; }
};

struct Sample {
  uint32_t count = 8;
  double rate = 1.5;
  bool on = false;
  std::string name = "x";
  std::optional<unsigned> port;
  Colours colours;
};

template <typename C, typename Visitor, base::if_config_t<C, Sample> = 0>
void visit_parameters(C& s, Visitor&& v) {
  v(base::Parameter{"count", "items", "how many", 1, 100}, s.count);
  v(base::Parameter{"rate", "Hz", "how fast", 0, 10}, s.rate);
  v(base::Parameter{"on", "yes/no", "whether"}, s.on);
  v(base::Parameter{"name", "text", "what"}, s.name);
  v(base::Parameter{"port", "port", "where", 0, 65535}, s.port);
  v(base::Parameter{"colours", "colours", "which"}, s.colours);
}

TEST(Parameters, EachKindParsesFromItsText) {
  Sample s;
  base::set_parameter(s, "count", "0x10");
  EXPECT_EQ(s.count, 16u);
  base::set_parameter(s, "count", "1e1");
  EXPECT_EQ(s.count, 10u);
  base::set_parameter(s, "rate", "2.25");
  EXPECT_DOUBLE_EQ(s.rate, 2.25);
  base::set_parameter(s, "on", "yes");
  EXPECT_TRUE(s.on);
  base::set_parameter(s, "name", "\"quoted\"");
  EXPECT_EQ(s.name, "quoted");
  base::set_parameter(s, "port", "1234");
  EXPECT_EQ(s.port, std::optional<unsigned>(1234));
  base::set_parameter(s, "port", "none");
  EXPECT_FALSE(s.port.has_value());
  base::set_parameter(s, "colours", "both");
  EXPECT_TRUE(s.colours.red && s.colours.blue);
}

TEST(Parameters, MalformedTextIsRefusedByName) {
  Sample s;
  EXPECT_THAT([&] { base::set_parameter(s, "count", "-3"); },
              ThrowsMessage<std::invalid_argument>(
                  HasSubstr("bad value '-3' for count (a whole number from 1 to 100)")));
  EXPECT_THAT([&] { base::set_parameter(s, "count", "0x1ffffffff"); },  // beyond 32 bits
              ThrowsMessage<std::invalid_argument>(HasSubstr("bad value '0x1ffffffff'")));
  EXPECT_THAT([&] { base::set_parameter(s, "port", "http"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("bad value 'http' for port")));
  EXPECT_THAT([&] { base::set_parameter(s, "on", "maybe"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("for on (yes or no)")));
  EXPECT_THAT([&] { base::set_parameter(s, "colours", "green"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("unknown colour 'green'")));
  EXPECT_THAT([&] { base::set_parameter(s, "size", "1"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("unknown parameter 'size'")));
  EXPECT_EQ(s.count, 8u);  // nothing changed by the refusals
  EXPECT_FALSE(s.port.has_value());
}

TEST(Parameters, RangesAreCheckedOptionalValuesOnlyWhenGiven) {
  Sample s;
  base::check_ranges(s, "--");  // port: none
  s.port = 70000;
  EXPECT_THAT(
      [&] { base::check_ranges(s, "--"); },
      ThrowsMessage<std::invalid_argument>(HasSubstr("--port must be 0 to 65535, not 70000")));
  s.port.reset();
  s.count = 0;
  EXPECT_THAT([&] { base::check_ranges(s); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("count must be 1 to 100, not 0")));
}

TEST(Parameters, AWrittenFileReadsBackToTheSameValues) {
  Sample s;
  s.count = 42;
  s.rate = 0.125;
  s.on = true;
  s.name = "a b";
  s.port = 0;
  s.colours = Colours::parse("blue");
  std::ostringstream out;
  base::write_config_file(out, s);
  EXPECT_THAT(out.str(), HasSubstr("name = \"a b\"  # text\n"));
  EXPECT_THAT(out.str(), HasSubstr("port = 0  # port\n"));
  Sample back;
  base::apply_config_text(out.str(), "sample.cfg", back,
                          [](const std::string&) { FAIL() << "no preset line"; });
  EXPECT_EQ(back.count, 42u);
  EXPECT_DOUBLE_EQ(back.rate, 0.125);
  EXPECT_TRUE(back.on);
  EXPECT_EQ(back.name, "a b");
  EXPECT_EQ(back.port, std::optional<unsigned>(0));
  EXPECT_EQ(back.colours.text(), "blue");
  EXPECT_EQ(base::value_text(Sample{}.port), "none");
}

TEST(Parameters, FileErrorsNameTheFileAndLine) {
  Sample s;
  EXPECT_THAT(
      [&] { base::apply_config_text("count = 4\n\nrate = fast\n", "run.cfg", s, [](auto&&) {}); },
      ThrowsMessage<std::invalid_argument>(HasSubstr("run.cfg:3: bad value 'fast' for rate")));
  EXPECT_THAT([&] { base::apply_config_text("count 4\n", "run.cfg", s, [](auto&&) {}); },
              ThrowsMessage<std::invalid_argument>(
                  HasSubstr("run.cfg:1: expected 'name = value', got 'count 4'")));
  EXPECT_THAT(
      [&] { base::apply_config_text("count = 4\npreset = mk2\n", "run.cfg", s, [](auto&&) {}); },
      ThrowsMessage<std::invalid_argument>(
          HasSubstr("run.cfg:2: 'preset' must come before every parameter")));
}

// Issue 38, item 12: a misspelt name is answered with the nearest names, closest first; a name
// far from every one gets none.
TEST(Parameters, AnUnknownNameSuggestsTheNearest) {
  EXPECT_EQ(base::edit_distance("base-latency", "base-latncy"), 1u);
  EXPECT_EQ(base::edit_distance("", "abc"), 3u);
  EXPECT_EQ(base::edit_distance("kitten", "sitting"), 3u);
  const std::vector<std::string> names = {"exchange.base-latency", "exchange.tiles-per-column",
                                          "sync.internal-cycles"};
  EXPECT_EQ(base::unknown_parameter_message("exchange.base_latency", names),
            "unknown parameter 'exchange.base_latency' (did you mean exchange.base-latency?)");
  EXPECT_EQ(base::unknown_parameter_message("bogus", names), "unknown parameter 'bogus'");
  EXPECT_EQ(base::did_you_mean({"a", "b", "c"}, "--"), " (did you mean --a, --b or --c?)");
}

}  // namespace
}  // namespace ipu::test
