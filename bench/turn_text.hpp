// Deterministic, realistic chat turns for benchmarks: a user's message and
// an assistant's answer of a few hundred bytes together, on one of a dozen
// everyday topics, with a long tail of generated names (people, places,
// products) so the vocabulary grows with the corpus as real transcripts do;
// and the queries a model would send to find them again. Sentences are
// templates whose {placeholders} are filled from the chat's topic. The same
// seed gives the same text on every machine and standard library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rng.hpp"

namespace voxos::bench {

struct topic {
  std::vector<std::string> nouns;
  std::vector<std::string> verbs; ///< base form
  std::vector<std::string> adjectives;
};

inline const std::vector<topic>& topics() {
  static const std::vector<topic> xs{
    {{"flight", "hotel", "train", "ticket", "passport", "luggage", "itinerary", "airport",
      "booking", "visa", "layover", "museum", "beach", "ferry", "hostel", "rental car"},
     {"book", "cancel", "reschedule", "pack", "visit", "compare", "upgrade", "check in"},
     {"cheap", "direct", "overnight", "refundable", "crowded", "scenic", "late", "early"}},
    {{"recipe", "oven", "dough", "sauce", "garlic", "onion", "pasta", "risotto", "spice", "butter",
      "flour", "stock", "marinade", "skillet", "dessert", "lentils"},
     {"bake", "simmer", "roast", "whisk", "chop", "season", "marinate", "freeze"},
     {"crispy", "vegetarian", "spicy", "gluten-free", "creamy", "quick", "leftover"}},
    {{"forecast", "rain", "storm", "temperature", "humidity", "wind", "frost", "heatwave",
      "umbrella", "sunrise", "pollen", "snowfall", "drizzle", "pressure"},
     {"expect", "clear", "drop", "warm up", "cool down", "pour", "gust"},
     {"chilly", "humid", "windy", "overcast", "freezing", "mild", "stormy"}},
    {{"function", "compiler", "database", "query", "index", "deployment", "branch", "commit",
      "test", "container", "latency", "memory leak", "stack trace", "endpoint", "schema"},
     {"refactor", "debug", "deploy", "merge", "profile", "migrate", "rollback", "benchmark"},
     {"flaky", "slow", "concurrent", "deprecated", "idempotent", "stale", "broken"}},
    {{"budget", "invoice", "mortgage", "savings", "pension", "dividend", "receipt", "expense",
      "subscription", "refund", "tax return", "interest rate", "transfer", "statement"},
     {"pay", "save", "invest", "reimburse", "categorise", "transfer", "split", "file"},
     {"monthly", "overdue", "fixed", "variable", "annual", "pending", "deductible"}},
    {{"appointment", "prescription", "dentist", "vaccine", "allergy", "physio", "sleep", "headache",
      "vitamin", "blood pressure", "workout", "knee", "diet", "clinic"},
     {"schedule", "renew", "stretch", "rest", "recover", "monitor", "measure"},
     {"sore", "chronic", "routine", "mild", "persistent", "healthy", "tired"}},
    {{"playlist", "concert", "album", "guitar", "piano", "lyrics", "festival", "vinyl", "drummer",
      "chorus", "setlist", "headphones", "orchestra", "podcast"},
     {"listen", "rehearse", "tune", "record", "stream", "shuffle", "compose"},
     {"acoustic", "live", "loud", "classical", "upbeat", "mellow", "sold-out"}},
    {{"tomato", "seedling", "compost", "hedge", "lawn", "greenhouse", "soil", "mulch", "orchard",
      "irrigation", "slug", "rose", "bulb", "pruning shears"},
     {"plant", "water", "prune", "harvest", "repot", "fertilise", "weed"},
     {"shady", "sunny", "waterlogged", "perennial", "dry", "overgrown", "fragrant"}},
    {{"boiler", "leak", "faucet", "drywall", "insulation", "roof", "gutter", "thermostat",
      "fuse box", "paint", "tile", "window frame", "radiator", "plumber"},
     {"fix", "replace", "seal", "sand", "insulate", "inspect", "drain"},
     {"damp", "cracked", "noisy", "draughty", "rusty", "loose", "energy-efficient"}},
    {{"meeting", "calendar", "deadline", "agenda", "invite", "reminder", "standup", "review",
      "quarterly report", "presentation", "timezone", "slot", "minutes", "offsite"},
     {"move", "confirm", "decline", "prepare", "summarise", "remind", "block"},
     {"recurring", "urgent", "tentative", "weekly", "internal", "overdue", "optional"}},
    {{"order", "parcel", "delivery", "return", "warranty", "discount", "size", "laptop", "sneakers",
      "coat", "charger", "voucher", "tracking number", "courier"},
     {"order", "return", "track", "exchange", "ship", "wrap", "compare"},
     {"delayed", "damaged", "cheaper", "waterproof", "second-hand", "wireless", "bulky"}},
    {{"homework", "essay", "exam", "lecture", "semester", "thesis", "tutor", "grammar",
      "vocabulary", "algebra", "chemistry", "library", "deadline extension", "syllabus"},
     {"revise", "study", "outline", "cite", "translate", "memorise", "submit"},
     {"difficult", "optional", "graded", "final", "bilingual", "advanced", "late"}},
  };
  return xs;
}

/// The words and sentences turns and queries are made of; a sentence's
/// {placeholders} are filled by expand().
struct phrasebook {
  std::vector<std::string> days;
  std::vector<std::string> user;      ///< a user's message: one of these
  std::vector<std::string> assistant; ///< an answer: two to four of these
  /// What a model asks the history for: a keyword or two, a name and a
  /// thing, a question in words, or a long rambling sentence.
  std::vector<std::string> query;
};

inline const phrasebook& phrases() {
  static const phrasebook xs{
    {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow",
     "next week", "tonight", "this weekend"},
    {
      "Can you {verb} the {noun} for {name} before {day}?",
      "What did we decide about the {adj} {noun} in {name}? I think {name} mentioned it.",
      "Remind me how to {verb} a {noun} when it is {adj}.",
      "I need a {adj} {noun} and a {noun} by {day}, around {price} euros if possible.",
      "Is the {noun} at {name} still {adj}? Last time {name} said it was.",
      "Please {verb} my {noun} and tell {name} about the {noun}.",
    },
    {
      "I found the {noun} from {name}, and it looks {adj} this time.",
      "You could {verb} the {noun} first, then {verb} the {noun} on {day}.",
      "On {date} {name} confirmed the {noun} for {clock}.",
      "The {adj} option costs about {price} euros, while the {noun} near {name} is {adj}.",
      "Earlier you said the {noun} was {adj}, so I would not {verb} it yet.",
      "I have noted that {name} prefers the {noun} over the {noun}.",
      "Shall I {verb} it and send {name} a short summary?",
    },
    {
      "{noun}",
      "{adj} {noun}",
      "{name} {noun}",
      "what did {name} say about the {noun}",
      "{verb} {noun} {day}",
      "I remember we talked about a {adj} {noun} and the {noun} with {name} around {day}, can "
      "you find what we decided about the {noun}?",
    },
  };
  return xs;
}

/// Names made of syllables: a pool that grows with the corpus's tail.
class name_pool {
public:
  explicit name_pool(std::size_t size, uint64_t seed) {
    static const std::vector<std::string> onsets{"b",  "d",  "k",  "l",  "m",  "n",  "r",
                                                 "s",  "t",  "v",  "br", "dr", "gr", "st",
                                                 "th", "ch", "sh", "pl", "tr", "z"};
    static const std::vector<std::string> vowels{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou"};
    static const std::vector<std::string> codas{"", "", "n", "r", "l", "s", "th", "nd", "x", "m"};
    rng r{seed};
    names_.reserve(size);
    for (std::size_t name_idx = 0; name_idx < size; ++name_idx) {
      std::string name;
      auto syllables = 2 + r.below(2);
      for (std::size_t syl = 0; syl < syllables; ++syl)
        name += r.pick(onsets) + r.pick(vowels) + (syl + 1 == syllables ? r.pick(codas) : "");
      name[0] = static_cast<char>(name[0] - 'a' + 'A');
      names_.push_back(std::move(name));
    }
  }
  /// A name, the lower indexes far more often (a long tail): three in four
  /// draws take the smaller of two indexes, the fourth any.
  const std::string& pick(rng& r) const {
    auto a = r.below(names_.size());
    auto b = r.below(names_.size());
    return names_[r.below(4) == 0 ? a : std::min(a, b)];
  }

private:
  std::vector<std::string> names_;
};

/// Fills a template's {placeholders} from `t`, the names and `r`.
inline std::string expand(const std::string& tmpl, const topic& t, const name_pool& names, rng& r) {
  std::string out;
  std::size_t at = 0;
  while (at < tmpl.size()) {
    auto open = tmpl.find('{', at);
    if (open == std::string::npos)
      break;
    auto close = tmpl.find('}', open);
    out.append(tmpl, at, open - at);
    auto slot = tmpl.substr(open + 1, close - open - 1);
    if (slot == "noun")
      out += r.pick(t.nouns);
    else if (slot == "verb")
      out += r.pick(t.verbs);
    else if (slot == "adj")
      out += r.pick(t.adjectives);
    else if (slot == "name")
      out += names.pick(r);
    else if (slot == "day")
      out += r.pick(phrases().days);
    else if (slot == "price")
      out += std::to_string(5 + r.below(400));
    else if (slot == "date")
      out += std::to_string(1 + r.below(28)) + " March";
    else if (slot == "clock")
      out += std::to_string(1 + r.below(12)) + (r.below(2) == 0 ? ":00" : ":30");
    at = close + 1;
  }
  out.append(tmpl, at, std::string::npos);
  return out;
}

/// One turn: the user's message and the assistant's answer.
struct turn_text {
  std::string user;
  std::string assistant;
};

/// Turns of chats, each chat on a topic of its own.
class turn_generator {
public:
  explicit turn_generator(uint64_t seed, std::size_t names = 20'000)
      : rng_{seed}, names_{names, seed ^ 0x5eedull} {}

  /// Picks the topic of the next turns (call it per chat).
  void start_chat() { topic_ = rng_.below(topics().size()); }

  turn_text next() {
    // One turn in five drifts to another topic for a moment, as chats do.
    const auto& t = topics()[rng_.below(5) == 0 ? rng_.below(topics().size()) : topic_];
    turn_text out;
    out.user = expand(rng_.pick(phrases().user), t, names_, rng_);
    auto sentences = 2 + rng_.below(3);
    for (std::size_t idx = 0; idx < sentences; ++idx)
      out.assistant +=
        (idx == 0 ? "" : " ") + expand(rng_.pick(phrases().assistant), t, names_, rng_);
    return out;
  }

private:
  rng rng_;
  name_pool names_;
  std::size_t topic_ = 0;
};

/// Queries over the vocabulary and the names of a turn_generator with the
/// same seed.
class query_generator {
public:
  explicit query_generator(uint64_t seed, std::size_t names = 20'000)
      : rng_{seed ^ 0x9e3779b9ull}, names_{names, seed ^ 0x5eedull} {}

  std::string next() {
    const auto& t = topics()[rng_.below(topics().size())];
    return expand(rng_.pick(phrases().query), t, names_, rng_);
  }

private:
  rng rng_;
  name_pool names_;
};

} // namespace voxos::bench
