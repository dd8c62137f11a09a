// `polyinfer tokenize -m FILE -p TEXT [--ids-only] [--no-bos] [--parse-special]`:
// the ids (and pieces) the model's tokenizer gives for a text.
#include <cstdio>
#include <string>

#include "cli_error.hpp"
#include "commands.hpp"
#include "polyinfer/gguf.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  bool ids_only = false;
  bool no_bos = false;
  bool parse_special = false;
};

int run_tokenize(const TokenizeOptions& o) {
  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(o.model));
  const auto ids = tok.encode(o.prompt, !o.no_bos, o.parse_special);
  if (o.ids_only) {
    std::string line;
    for (const int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
    std::printf("%s\n", line.c_str());
    return 0;
  }
  for (const int32_t id : ids) {
    const std::string piece = tok.piece(id);
    std::printf("%6d -> '%.*s'\n", id, static_cast<int>(piece.size()), piece.data());
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("tokenize", "Show the token ids of a text");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("-m,--model", o->model, "GGUF file with a tokenizer")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Text to tokenize")->required();
  cmd->add_flag("--ids-only", o->ids_only, "Print only the ids, space-separated, on one line");
  cmd->add_flag("--no-bos", o->no_bos, "Do not add BOS/EOS (add_special = false)");
  cmd->add_flag("--parse-special", o->parse_special,
                "Match control tokens such as <s> in the text");
  cmd->callback([o, &exit_code] { exit_code = run_guarded([&] { return run_tokenize(*o); }); });
}

}  // namespace polyinfer::cli
