// The root of Codefy's error hierarchy, at the bottom layer so every layer
// (graph, train, engine, server) throws the same family, as c10's Exception.h
// sits under everything in PyTorch. Errors that name a node live in
// engine/errors.h; each layer derives its own from codefy::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace codefy {

/// Base of every Codefy error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Input from outside that Codefy refuses: a request body or message, a
/// file's contents, a path a run may not use, a shape or option a person
/// wrote. The server answers it with 400 (or its route's 4xx), never 500.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A run was stopped by its cancellation token (thrown between batches by
/// training, between nodes by the executor).
class Cancelled : public Error {
 public:
  Cancelled() : Error("the run was stopped") {}
};

}  // namespace codefy
