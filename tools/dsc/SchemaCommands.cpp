//===- SchemaCommands.cpp - dsc explain, dsc schema -----------------------===//

#include "Commands.h"

#include "dsc/Config/SchemaExport.h"

#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc::tool {

cl::SubCommand ExplainCommand("explain",
                              "Explain a DeepSpeed config key: type, default, "
                              "range, and what each front end does with it");
cl::SubCommand SchemaCommand("schema", "Print the ds_config schema");

static cl::list<std::string> Keys(cl::Positional, cl::desc("<key>..."),
                                  cl::OneOrMore, cl::sub(ExplainCommand));

enum class SchemaFormat { JsonSchema, Markdown };
static cl::opt<SchemaFormat> Format(
    "format", cl::desc("Output format"),
    cl::values(clEnumValN(SchemaFormat::JsonSchema, "json-schema",
                          "JSON Schema (draft-07) for editors"),
               clEnumValN(SchemaFormat::Markdown, "markdown",
                          "the key reference of docs/config-keys.md")),
    cl::init(SchemaFormat::JsonSchema), cl::sub(SchemaCommand));

int runExplain() {
  int Status = ExitClean;
  for (const std::string &Query : Keys) {
    std::vector<const KeySpec *> Found = findKeysForQuery(Query);
    if (Found.empty()) {
      WithColor::error(errs(), "dsc explain")
          << "no DeepSpeed key `" << Query << "`";
      StringRef Q = Query;
      size_t Dot = Q.rfind('.');
      StringRef Parent = Dot == StringRef::npos ? "" : Q.take_front(Dot);
      StringRef Name = Dot == StringRef::npos ? Q : Q.drop_front(Dot + 1);
      auto Suggestions = suggestionsIn(Parent, Name, "");
      if (!Suggestions.empty())
        errs() << "; did you mean `"
               << (Parent.empty() ? "" : (Parent + ".").str())
               << Suggestions.front() << "`?";
      errs() << "\n";
      Status = ExitFindings;
      continue;
    }
    explainKey(outs(), Found);
  }
  return Status;
}

int runSchema() {
  if (Format == SchemaFormat::Markdown)
    printKeyReference(outs());
  else
    outs() << formatv("{0:2}", buildJsonSchema()) << "\n";
  return ExitClean;
}

} // namespace dsc::tool
