// Control and utility: Start and Print.
#include "nodes/library.h"

namespace codefy {

using graph::DataType;

namespace {

void register_start(NodeRegistry& r) {
  r.add({"Start",
         "Control",
         "Entry point: the nodes its trigger reaches run, with everything they take data from.",
         {},
         {def::out("trigger", DataType::kTrigger, "Execution trigger marker (carries no data)")},
         {}},
        [](NodeContext&) { return ValueMap{}; });
}

void register_print(NodeRegistry& r) {
  r.add({"Print",
         "Utility",
         "Print a value to the console and pass it through.",
         {def::in("value", DataType::kAny, "Value to print")},
         {def::out("value", DataType::kAny, "Pass-through")},
         {def::text("label", "", "Label prefix")}},
        [](NodeContext& ctx) {
          const Value& v = ctx.input("value");
          const std::string label = ctx.param_string("label");
          const std::string text = to_display_string(v);
          ctx.print(label.empty() ? text : "[" + label + "] " + text);
          return ValueMap{{"value", v}};
        });
}

}  // namespace

void nodes::register_utility_nodes(NodeRegistry& r) {
  register_start(r);
  register_print(r);
}

}  // namespace codefy
