// The engine's one error type: a message that names the field, what was expected and what was found.
#pragma once

#include <stdexcept>
#include <string>

namespace attnscope {

class InputError : public std::runtime_error {
 public:
  InputError(std::string field, const std::string& expected, const std::string& actual)
      : std::runtime_error(field + ": expected " + expected + ", got " + actual), field_(std::move(field)) {}
  // A message that does not fit "expected/got" (a file that cannot be opened, say).
  InputError(std::string field, const std::string& message)
      : std::runtime_error(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// "3 x 4", the way every shape is written in messages.
std::string shapeString(long rows, long cols);

}  // namespace attnscope
