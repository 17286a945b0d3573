#pragma once
// hostkeeperd's log lines (stderr, or the journal's stream) carry text from
// elsewhere: a command's standard error, registries' and login servers'
// messages, HTTP reason phrases and header values, host names and paths from
// requests. This formatter passes every message through the one printable
// filter (proto/printable.hpp) before the pattern lays it out, so no log
// call can put an escape sequence on a terminal or a forged line (a newline
// and a "[err]") in the journal, whatever it logs.

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string>
#include <utility>

#include "proto/printable.hpp"

namespace hostkeeper::daemon::app {

class PrintableLogFormatter final : public spdlog::formatter {
  public:
    explicit PrintableLogFormatter(std::string pattern)
        : pattern_(std::move(pattern)),
          inner_(std::make_unique<spdlog::pattern_formatter>(pattern_)) {}

    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        std::string text;
        proto::append_printable(text, std::string_view(msg.payload.data(), msg.payload.size()));
        spdlog::details::log_msg filtered(msg);
        filtered.payload = spdlog::string_view_t(text.data(), text.size());
        inner_->format(filtered, dest);
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<PrintableLogFormatter>(pattern_);
    }

  private:
    std::string pattern_;
    std::unique_ptr<spdlog::pattern_formatter> inner_;
};

}  // namespace hostkeeper::daemon::app
