#pragma once
// One active run per pipeline, across processes and hosts: a session-level advisory lock
// keyed by the pipeline's name. A lost connection loses the lock, and PostgreSQL releases it
// when the process dies, so it is taken again on every (re)connect.
#include <stdexcept>
#include <string>

#include <pqxx/pqxx>

namespace tidemark::pipeline {

// Another process holds the pipeline; the message says which.
struct PipelineBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Takes the pipeline's lock on `connection`'s session; PipelineBusy, naming the holder, when
// another session holds it.
void take_pipeline_lock(pqxx::connection& connection, const std::string& pipeline);
// Releases it at once: a closed connection's backend may take a moment to exit, and the next
// run must not find the lock still held. Never throws (the lock goes with the session anyway).
void release_pipeline_lock(pqxx::connection& connection, const std::string& pipeline) noexcept;

}  // namespace tidemark::pipeline
