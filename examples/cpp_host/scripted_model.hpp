// A scripted stand-in for a language model: given the run's tool view and
// the outputs of its previous round, it answers the next round of tool
// calls, or nothing when it is ready to answer. A real model plugs in at
// the same place (model::next_round), fed the same view and outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/types.hpp"

namespace voxos::example {

class model {
public:
  virtual ~model() = default;
  /// The user's message this turn answers.
  virtual std::string user_text() const = 0;
  /// The next round of tool calls after `previous` (empty on the first), or
  /// nullopt when the model answers instead.
  virtual std::optional<std::vector<tool_call>>
  next_round(const nlohmann::json& view, const std::vector<tool_output>& previous) = 0;
  /// The assistant's answer, from every output it saw.
  virtual std::string answer(const std::vector<tool_output>& outputs) const = 0;
};

/// Asks for a seven-day forecast: one round of seven get_forecast calls
/// (one per day from `first_date`, "YYYY-MM-DD"), then answers with them.
class forecast_model final : public model {
public:
  forecast_model(std::string address, std::string first_date)
      : address_(std::move(address)), first_date_(std::move(first_date)) {}

  std::string user_text() const override {
    return "What is the weather at " + address_ + " for the next seven days?";
  }

  std::optional<std::vector<tool_call>>
  next_round(const nlohmann::json& view, const std::vector<tool_output>& previous) override;

  std::string answer(const std::vector<tool_output>& outputs) const override;

private:
  std::string address_;
  std::string first_date_;
  bool asked_ = false;
};

/// Plays rounds written down in a JSON file: {"user": "...", "rounds":
/// [[{"name": ..., "arguments": {...}}, ...], ...]}; call ids are made up.
class file_model final : public model {
public:
  explicit file_model(nlohmann::json script) : script_(std::move(script)) {}

  std::string user_text() const override { return script_.value("user", ""); }

  std::optional<std::vector<tool_call>>
  next_round(const nlohmann::json& view, const std::vector<tool_output>& previous) override;

  std::string answer(const std::vector<tool_output>& outputs) const override;

private:
  nlohmann::json script_;
  std::size_t next_ = 0;
};

/// Answers a queued item's text without tool calls: "Done: <text>".
class reply_model final : public model {
public:
  explicit reply_model(std::string text) : text_(std::move(text)) {}

  std::string user_text() const override { return text_; }

  std::optional<std::vector<tool_call>> next_round(const nlohmann::json&,
                                                   const std::vector<tool_output>&) override {
    return std::nullopt;
  }

  std::string answer(const std::vector<tool_output>&) const override { return "Done: " + text_; }

private:
  std::string text_;
};

/// The model-facing name of the view's direct tool `tool` (its own name at
/// its server), or "" if the view has none.
std::string model_name_of(const nlohmann::json& view, const std::string& tool);

/// The first text content of an "ok" output, or its error message.
std::string text_of(const tool_output& out);

/// `date` ("YYYY-MM-DD") plus `days`.
std::string add_days(const std::string& date, int days);

} // namespace voxos::example
