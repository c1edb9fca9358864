#include "connectors/nats/nats_source.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "connectors/file/jsonl_decoder.hpp"
#include "connectors/nats/connection.hpp"
#include "connectors/nats/position.hpp"

namespace tidemark::connectors::nats {

namespace {

using Clock = std::chrono::steady_clock;

// Messages asked for per pull request, and how long a partition may stay silent while it
// still owes messages up to its end sequence (a cluster electing a new stream leader takes
// seconds; longer means the messages are gone or the server is).
constexpr int kFetchBatch = 1000;
constexpr std::int64_t kFetchWaitMs = 2000;
constexpr auto kMaxSilence = std::chrono::seconds(30);
// Pull requests in a row that brought nothing though messages are owed before the consumer is
// made again: an ephemeral consumer lives on one server, and goes when that server does.
constexpr int kEmptyFetchesBeforeResubscribe = 2;
// The pause before trying again after the servers refused a request (no leader yet).
constexpr auto kRetryPause = std::chrono::milliseconds(250);
// How long one JetStream API request (stream info, making or deleting a consumer) may take. A
// request sent to a server that just died, or placed on it, gets no answer at all: a short
// wait, then a retry, loads on sooner than the client's default of 10 s (docs/scale-out.md
// "Figures": the stall while a leader fails over).
constexpr auto kRequestTimeout = std::chrono::seconds(2);

class NatsPartitionSource final : public pipeline::Source {
 public:
  NatsPartitionSource(NatsSourceOptions options, std::shared_ptr<const pipeline::RecordLayout> layout)
      : options_(std::move(options)),
        layout_(std::move(layout)),
        partition_(options_.partition.value()),
        stream_(partition_stream(options_, partition_)),
        subjects_(partition_subjects(options_, partition_)) {}

  const std::string& identity() const override { return stream_; }

  void seek(const pipeline::Position& from) override {
    const auto parsed = parse_position(from.text);
    if (!parsed) {
      throw pipeline::SourceError("checkpoint '" + from.text + "' is not a position of the nats partition " + stream_ +
                                  " (expected <sequence>@<stream creation time>, e.g. 42@2026-12-02T16:48:41.123456789Z)");
    }
    last_ = *parsed;
    resumed_ = true;
  }

  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                   std::size_t max_bytes) override {
    if (!connection_) take();
    std::size_t appended = 0;
    std::size_t bytes = 0;
    while (appended < max_records && last_.sequence < end_sequence_) {
      if (pending_.empty()) fetch();
      StreamMessage& message = pending_.front();
      if (appended > 0 && bytes + message.body.size() > max_bytes) break;
      pipeline::SourcePosition where;
      where.file = stream_ + " sequence " + std::to_string(message.sequence);
      where.line = 1;
      where.end_offset = message.body.size();
      out.push_back(file::decode_jsonl_line(message.body, std::move(where), *layout_));
      bytes += message.body.size();
      ++appended;
      last_.sequence = message.sequence;
      pending_.pop_front();
    }
    return appended;
  }

  pipeline::Position position() const override {
    return {last_.created.empty() ? std::string() : to_text(last_)};
  }

  bool precedes(const pipeline::Position& earlier, const pipeline::Position& later) const override {
    // The empty text is the start, before every position.
    if (later.text.empty()) return false;
    if (earlier.text.empty()) return true;
    const auto a = parse_position(earlier.text);
    const auto b = parse_position(later.text);
    if (!a || !b) {
      throw pipeline::SourceError("'" + (a ? later.text : earlier.text) + "' is not a position of the nats partition " +
                                  stream_);
    }
    return nats::precedes(*a, *b);
  }

  std::string_view format() const override { return kRecordFormat; }

 private:
  // A gap: messages after the checkpoint that the stream no longer has. Refused, since
  // JetStream would silently start a consumer at its first sequence instead, unless the
  // operator accepted it (run --accept-gap).
  void gap(const std::string& what) const {
    if (!options_.accept_gap) {
      throw pipeline::PartitionRefused(options_.origin + ": partition " + stream_ + " refused: " + what +
                                       ". Check the stream (docs/scale-out.md \"A recreated or purged stream\"); "
                                       "run --accept-gap loads what the stream still has and moves on");
    }
    spdlog::warn("{}: partition {}: {}; accepted (--accept-gap)", options_.origin, stream_, what);
  }

  // Taking the partition: the stream must be the checkpoint's and hold what follows it.
  void take() {
    // Reconnecting: a server that goes away (a cluster node killed or restarted) costs a
    // pause while another takes over, not the run.
    ConnectionOptions settings;
    settings.servers = options_.servers;
    settings.reconnect = true;
    settings.request_timeout = kRequestTimeout;
    connection_ = std::make_unique<Connection>(settings);
    const std::optional<StreamInfo> info = retrying("reading the stream's info", [&] { return connection_->stream_info(stream_); });
    if (!info) {
      throw pipeline::SourceError(options_.origin + ": stream " + stream_ +
                                  " does not exist: create the partitions with tidemark nats setup --pipeline NAME");
    }
    const std::string created = format_created(info->created);
    if (resumed_ && last_.created != created) {
      gap("the stream was created at " + created + ", not at " + last_.created +
          " as the checkpoint says: it was deleted and created again (the checkpoint's sequence " +
          std::to_string(last_.sequence) + " names a message of the old stream)");
      last_ = StreamPosition{0, created};
    }
    last_.created = created;
    // An empty stream reports first 0 (new) or last + 1 (purged): both hold nothing to lose.
    if (last_.sequence + 1 < info->first_sequence) {
      gap("its first sequence is " + std::to_string(info->first_sequence) + " but the next to load is " +
          std::to_string(last_.sequence + 1) + ": " + std::to_string(info->first_sequence - last_.sequence - 1) +
          " message(s) were removed (purged, or past max_age/max_bytes) before they were loaded");
      last_.sequence = info->first_sequence - 1;
    }
    if (last_.sequence > info->last_sequence) {
      throw pipeline::PartitionRefused(options_.origin + ": partition " + stream_ + " refused: the checkpoint is at sequence " +
                                       std::to_string(last_.sequence) + " but the stream ends at " +
                                       std::to_string(info->last_sequence) + " (same creation time): it is not the stream "
                                       "the checkpoint was written for");
    }
    end_sequence_ = info->last_sequence;
    spdlog::info("{}: partition {} taken at sequence {}, draining up to {}", options_.origin, stream_, last_.sequence,
                 end_sequence_);
  }

  // `request`'s answer; while the servers refuse it (a cluster without a leader for the
  // stream yet, a node going away), asks again until kMaxSilence has passed.
  template <typename Request>
  std::invoke_result_t<Request> retrying(const std::string& what, Request request) {
    const auto deadline = Clock::now() + kMaxSilence;
    for (;;) {
      try {
        return request();
      } catch (const NatsError& error) {
        if (Clock::now() >= deadline) throw;
        spdlog::warn("{}: partition {}: {} failed ({}); trying again", options_.origin, stream_, what, error.what());
        std::this_thread::sleep_for(kRetryPause);
      }
    }
  }

  // Refills pending_ with messages after last_, each the one after the one before it. The
  // consumer is made (again) from the sequence after last_ whenever it failed or stayed silent
  // while messages are owed: the server it lived on may have gone.
  void fetch() {
    const auto deadline = Clock::now() + kMaxSilence;
    int empty_fetches = 0;
    while (pending_.empty()) {
      std::vector<StreamMessage> messages;
      try {
        if (!consumer_) consumer_ = std::make_unique<PullConsumer>(*connection_, stream_, subjects_, last_.sequence + 1);
        const std::uint64_t owed = end_sequence_ - last_.sequence;
        messages = consumer_->fetch(static_cast<int>(std::min<std::uint64_t>(owed, kFetchBatch)), kFetchWaitMs);
        if (messages.empty() && ++empty_fetches >= kEmptyFetchesBeforeResubscribe) {
          spdlog::warn("{}: partition {}: no message after sequence {} in {} pull requests; subscribing again",
                       options_.origin, stream_, last_.sequence, empty_fetches);
          consumer_.reset();
          empty_fetches = 0;
        }
      } catch (const NatsError& error) {
        spdlog::warn("{}: partition {}: {}; subscribing again from sequence {}", options_.origin, stream_,
                     error.what(), last_.sequence + 1);
        consumer_.reset();
        std::this_thread::sleep_for(kRetryPause);
      }
      std::uint64_t expected = last_.sequence + 1;
      for (StreamMessage& message : messages) {
        if (message.sequence < expected) continue;  // at or before the checkpoint: loaded already
        if (message.sequence > end_sequence_) break;  // published after the partition was taken: next run
        if (message.sequence != expected) {
          gap("sequence " + std::to_string(message.sequence) + " follows " + std::to_string(expected - 1) +
              ": messages in between were removed before they were loaded");
        }
        expected = message.sequence + 1;
        pending_.push_back(std::move(message));
      }
      if (pending_.empty() && Clock::now() >= deadline) {
        throw pipeline::SourceError(options_.origin + ": partition " + stream_ + ": no message after sequence " +
                                    std::to_string(last_.sequence) + " within " +
                                    std::to_string(kMaxSilence.count()) + " s, though the stream's last sequence was " +
                                    std::to_string(end_sequence_) + " when the run took it");
      }
    }
  }

  NatsSourceOptions options_;
  std::shared_ptr<const pipeline::RecordLayout> layout_;
  int partition_;
  std::string stream_;
  std::string subjects_;
  StreamPosition last_;    // the last sequence loaded (0: none) of the stream created then
  bool resumed_ = false;   // seek() gave a checkpoint to check against the stream
  std::uint64_t end_sequence_ = 0;  // the stream's last sequence when the partition was taken
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<PullConsumer> consumer_;
  std::deque<StreamMessage> pending_;  // fetched, checked, not returned yet
};

}  // namespace

std::unique_ptr<pipeline::Source> open_nats_partition(const NatsSourceOptions& options,
                                                      std::shared_ptr<const pipeline::RecordLayout> layout) {
  if (!options.partition || *options.partition < 0 || *options.partition >= options.partitions) {
    throw pipeline::SourceError(options.origin + ": a nats source is read one partition at a time (tidemark run "
                                "drains each in turn, serve consumes each it owns)");
  }
  return std::make_unique<NatsPartitionSource>(options, std::move(layout));
}

namespace {

class StreamWatcher final : public pipeline::PartitionWatcher {
 public:
  explicit StreamWatcher(const NatsSourceOptions& options) : options_(options), connection_(options.servers) {}

  bool has_work(int partition, std::string_view checkpoint) override {
    const std::optional<StreamInfo> info = connection_.stream_info(partition_stream(options_, partition));
    if (!info) return true;
    if (checkpoint.empty()) return info->last_sequence > 0;
    const std::optional<StreamPosition> last = parse_position(checkpoint);
    if (!last || last->created != format_created(info->created)) return true;
    return last->sequence != info->last_sequence;
  }

 private:
  NatsSourceOptions options_;
  Connection connection_;
};

}  // namespace

std::unique_ptr<pipeline::PartitionWatcher> watch_partitions(const NatsSourceOptions& options) {
  return std::make_unique<StreamWatcher>(options);
}

}  // namespace tidemark::connectors::nats
