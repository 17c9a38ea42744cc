//===- ChatTemplateFile.cpp - a checkpoint's chat template
//-----------------===//

#include "runtime/import/ChatTemplateFile.h"

#include "hw/support/InputFile.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <sys/stat.h>

namespace pccx::import {

namespace {

/// Whether `path` names anything (a dangling symlink counts: reading it
/// then fails with an error naming it).
bool exists(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 || errno != ENOENT;
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
      if (entry.is_object() && entry.contains("name") &&
          entry["name"].is_string() && entry["name"] == "default" &&
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
  // The template is embedded in the bundle and parsed at every open.
  if (exists(path)) {
    if (!support::readInputFile(path, support::kMaxTemplateFileBytes, &bytes,
                                error))
      return false;
    *text = bytes;
    *source = path;
    return true;
  }
  for (const char *name : {"chat_template.json", "tokenizer_config.json"}) {
    path = dir + "/" + name;
    if (!exists(path))
      continue;
    if (!support::readInputFile(path, support::kMaxJsonFileBytes, &bytes,
                                error))
      return false;
    nlohmann::json config =
        nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      *error = path + ": not a JSON object";
      return false;
    }
    if (!config.contains("chat_template"))
      continue;
    *source = path;
    if (!templateOf(config["chat_template"], path, text, error))
      return false;
    if (text->size() > support::kMaxTemplateFileBytes) {
      *error = path + ": 'chat_template' is larger than " +
               std::to_string(support::kMaxTemplateFileBytes) + " bytes";
      return false;
    }
    return true;
  }
  return true;
}

} // namespace pccx::import
