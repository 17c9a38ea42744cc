//===- ChatTemplateFile.cpp - a checkpoint's chat template
//-----------------===//

#include "compiler/import/ChatTemplateFile.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace pccx::import {

namespace {

/// The file's bytes; false when it does not exist.
bool slurp(const std::string &path, std::string *bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream all;
  all << in.rdbuf();
  *bytes = all.str();
  return true;
}

/// A template field: a string, or a list of named templates.
bool templateOf(const nlohmann::json &field, const std::string &where,
                std::string *text, std::string *error) {
  if (field.is_string()) {
    *text = field.get<std::string>();
    return true;
  }
  if (field.is_array()) {
    for (const nlohmann::json &entry : field)
      if (entry.is_object() && entry.value("name", "") == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        *text = entry["template"].get<std::string>();
        return true;
      }
    *error = where + ": no template named \"default\" in 'chat_template'";
    return false;
  }
  *error = where + ": 'chat_template' is neither a string nor a list of "
                   "named templates";
  return false;
}

} // namespace

bool readChatTemplate(const std::string &dir, std::string *text,
                      std::string *source, std::string *error) {
  text->clear();
  source->clear();
  std::string bytes;
  std::string path = dir + "/chat_template.jinja";
  if (slurp(path, &bytes)) {
    *text = bytes;
    *source = path;
    return true;
  }
  for (const char *name : {"chat_template.json", "tokenizer_config.json"}) {
    path = dir + "/" + name;
    if (!slurp(path, &bytes))
      continue;
    nlohmann::json config =
        nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      *error = path + ": not a JSON object";
      return false;
    }
    if (!config.contains("chat_template"))
      continue;
    *source = path;
    return templateOf(config["chat_template"], path, text, error);
  }
  return true;
}

} // namespace pccx::import
