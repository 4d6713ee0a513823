#include "scripted_model.hpp"

#include <cstdio>
#include <ctime>

namespace voxos::example {

using nlohmann::json;

std::string model_name_of(const json& view, const std::string& tool) {
  for (const auto& entry : view.value("direct", json::array()))
    if (entry.value("tool", "") == tool)
      return entry.value("model_name", "");
  return {};
}

std::string text_of(const tool_output& out) {
  auto doc = json::parse(out.output, nullptr, false);
  if (!doc.is_object())
    return out.output;
  if (out.status != "ok")
    return doc.value("message", out.status);
  for (const auto& item : doc.value("content", json::array()))
    if (item.value("type", "") == "text")
      return item.value("text", "");
  return doc.dump();
}

std::string add_days(const std::string& date, int days) {
  std::tm when{};
  if (std::sscanf(date.c_str(), "%d-%d-%d", &when.tm_year, &when.tm_mon, &when.tm_mday) != 3)
    return date;
  when.tm_year -= 1900;
  when.tm_mon -= 1;
  auto seconds = timegm(&when) + static_cast<std::time_t>(days) * 86'400;
  std::tm out{};
  gmtime_r(&seconds, &out);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &out);
  return text;
}

std::optional<std::vector<tool_call>> forecast_model::next_round(const json& view,
                                                                 const std::vector<tool_output>&) {
  if (asked_)
    return std::nullopt;
  asked_ = true;
  auto name = model_name_of(view, "get_forecast");
  if (name.empty())
    return std::nullopt;
  std::vector<tool_call> calls;
  for (int day = 0; day < 7; ++day)
    calls.push_back(
      {"call_" + std::to_string(day + 1), name,
       json{{"location", {{"address", address_}}}, {"date", add_days(first_date_, day)}}.dump()});
  return calls;
}

std::string forecast_model::answer(const std::vector<tool_output>& outputs) const {
  if (outputs.empty())
    return "I cannot look up the weather: no forecast tool is available to me.";
  std::string out = "Here is the seven-day forecast for " + address_ + ":\n";
  for (const auto& o : outputs)
    out += "- " + text_of(o) + "\n";
  return out;
}

std::optional<std::vector<tool_call>> file_model::next_round(const json& view,
                                                             const std::vector<tool_output>&) {
  const auto& rounds = script_.value("rounds", json::array());
  if (next_ >= rounds.size())
    return std::nullopt;
  std::vector<tool_call> calls;
  for (const auto& call : rounds[next_]) {
    auto name = model_name_of(view, call.value("name", ""));
    calls.push_back({"call_" + std::to_string(next_ + 1) + "_" + std::to_string(calls.size() + 1),
                     name.empty() ? call.value("name", "") : name,
                     call.value("arguments", json::object()).dump()});
  }
  ++next_;
  return calls;
}

std::string file_model::answer(const std::vector<tool_output>& outputs) const {
  std::string out;
  for (const auto& o : outputs)
    out += o.call_id + ": " + text_of(o) + "\n";
  return out;
}

} // namespace voxos::example
