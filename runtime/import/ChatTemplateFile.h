//===- ChatTemplateFile.h - a checkpoint's chat template --------*- C++ -*-===//
//
// Hugging Face keeps a model's chat template (Jinja text) in one of three
// places of the checkpoint directory, looked up in the order transformers
// uses: chat_template.jinja, chat_template.json ({"chat_template": ...}),
// then the "chat_template" field of tokenizer_config.json (a string, or a
// list of {"name", "template"} where "default" is used).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_CHATTEMPLATEFILE_H
#define PCCX_RUNTIME_IMPORT_CHATTEMPLATEFILE_H

#include <string>

namespace pccx::import {

/// Reads the template of checkpoint directory `dir` into `*text` (empty
/// when the checkpoint has none) and names the file in `*source`. Returns
/// false with `*error` naming the file when one is present but unreadable
/// or malformed.
bool readChatTemplate(const std::string &dir, std::string *text,
                      std::string *source, std::string *error);

} // namespace pccx::import

#endif
