#pragma once
// One active run per pipeline, across processes and hosts: session-level advisory locks keyed
// by the pipeline's name. A lost connection loses its lock, and PostgreSQL releases them when
// the process dies, so a lock is taken again on every (re)connect.
//
// A pipeline has two locks, and a run holds both while it commits: the first on the session
// it records the run on, the second on the session it stages batches ahead on (Committer::
// stage_batches_ahead), or on the first session when it has only one. A batch commits on a
// session that holds one of them, so no other run can commit beside it, whichever of a run's
// two sessions is lost: it cannot hold both.
#include <chrono>
#include <stdexcept>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/core/error.hpp"

namespace tidemark::pipeline {

// Another process holds the pipeline; the message says which.
struct PipelineBusy : tidemark::Error {
  explicit PipelineBusy(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

enum class PipelineLock { kFirst, kSecond };

// Takes one of the pipeline's locks on `connection`'s session; PipelineBusy, naming the
// holder, when another session holds it.
void take_pipeline_lock(pqxx::connection& connection, const std::string& pipeline,
                        PipelineLock lock = PipelineLock::kFirst);
// Releases it at once: a closed connection's backend may take a moment to exit, and the next
// run must not find the lock still held. Never throws (the lock goes with the session anyway).
void release_pipeline_lock(pqxx::connection& connection, const std::string& pipeline,
                           PipelineLock lock = PipelineLock::kFirst) noexcept;
// Waits up to `timeout` until no session holds the pipeline's first lock, and lets go of it at
// once: for a caller refused by a holder it cannot name yet, which waits for it to be done.
// False when the wait timed out.
bool wait_for_pipeline_lock(pqxx::connection& connection, const std::string& pipeline,
                            std::chrono::milliseconds timeout);

}  // namespace tidemark::pipeline
