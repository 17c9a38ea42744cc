//===- Gemma3nAttrs.cpp - Gemma 3n module attributes ----------------------===//

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Gemma3n/JsonAttr.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace pccx::gemma3n;

namespace pccx::import {
bool operator==(const Gemma3nTextConfig &a, const Gemma3nTextConfig &b) {
  return a.toJson(-1) == b.toJson(-1);
}
llvm::hash_code hash_value(const Gemma3nTextConfig &config) {
  return llvm::hash_value(config.toJson(-1));
}
} // namespace pccx::import

#define GET_ATTRDEF_CLASSES
#include "dialects/Gemma3n/Gemma3nAttrs.cpp.inc"

namespace {
/// Prints the config under a short alias (`#config = #gemma3n.config<...>`
/// at the top of the module), so that IR stays readable.
struct Gemma3nAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<ConfigAttr>(attr)) {
      os << "config";
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void Gemma3nDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Gemma3n/Gemma3nAttrs.cpp.inc"
      >();
  addInterfaces<Gemma3nAsmInterface>();
}

Attribute ConfigAttr::parse(AsmParser &parser, Type) {
  DictionaryAttr dict;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseAttribute(dict) ||
      parser.parseGreater())
    return {};
  nlohmann::json json;
  std::string error;
  pccx::import::Gemma3nTextConfig config;
  if (!pccx::attrToJson(dict, json, &error) ||
      // Invalid UTF-8 in a string is replaced rather than thrown (built
      // without exceptions): the parser then names the field it is in.
      !pccx::import::parseGemma3nConfig(
          json.dump(-1, ' ', false,
                    nlohmann::json::error_handler_t::replace),
          &config, &error,
                                        "#gemma3n.config")) {
    parser.emitError(loc, error);
    return {};
  }
  return ConfigAttr::get(parser.getContext(), config);
}

void ConfigAttr::print(AsmPrinter &printer) const {
  Builder b(getContext());
  printer << '<';
  printer.printAttribute(pccx::jsonToAttr(b, getConfig().toJsonValue()));
  printer << '>';
}
