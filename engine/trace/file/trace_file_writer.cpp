// TraceFileWriter: buffers whole records and appends them to the file (see trace_file_writer.h).
#include "trace/file/trace_file_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "trace/file/trace_format.h"

namespace shardscope {

TraceFileWriter::TraceFileWriter(const std::string& path, TraceFileWriterOptions options)
    : path_(path), options_(options), last_flush_(std::chrono::steady_clock::now()) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw std::runtime_error("cannot open trace file '" + path + "' for writing: " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IONBF, 0);  // our buffer holds whole records; no second buffer below it
  write_locked(trace_format::encode_preamble());
  if (options_.max_delay.count() > 0) timer_ = std::thread([this] { run_timer(); });
}

TraceFileWriter::~TraceFileWriter() {
  stop_timer();
  std::lock_guard lock(mutex_);
  if (!file_) return;
  try {
    flush_locked();
  } catch (...) {  // a destructor must not throw; the records already written stay readable
  }
  std::fclose(file_);
}

void TraceFileWriter::begin(const TraceHeader& header) {
  std::lock_guard lock(mutex_);
  if (begun_) throw std::logic_error("trace file '" + path_ + "': begin() called twice");
  begun_ = true;
  trace_format::append_record(buffer_, trace_format::RecordType::Header, trace_format::encode_header_json(header));
  flush_locked();
}

void TraceFileWriter::emit(const TraceEvent& event) {
  std::lock_guard lock(mutex_);
  if (!begun_ || ended_) throw std::logic_error("trace file '" + path_ + "': emit() outside begin()..end()");
  throw_timer_error_locked();
  blocks_.add(event);
  if (blocks_.full()) blocks_.close_block(buffer_);
  ++events_;
  // A phase boundary is flushed at once: a killed run's file then holds every phase it reached.
  if (event.kind == TraceEventKind::Phase || event.kind == TraceEventKind::Error || event.kind == TraceEventKind::RunEnd ||
      buffer_.size() + blocks_.payload_bytes() >= options_.buffer_bytes ||
      (events_ % 64 == 0 && std::chrono::steady_clock::now() - last_flush_ >= options_.max_delay))
    flush_locked();
}

void TraceFileWriter::end() {
  stop_timer();
  std::lock_guard lock(mutex_);
  if (ended_ || !file_) return;
  throw_timer_error_locked();
  ended_ = true;
  blocks_.close_block(buffer_);
  trace_format::append_record(buffer_, trace_format::RecordType::End, {});
  flush_locked();
  const bool failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed) throw std::runtime_error("cannot close trace file '" + path_ + "': " + std::strerror(errno));
}

void TraceFileWriter::flush() {
  std::lock_guard lock(mutex_);
  throw_timer_error_locked();
  flush_locked();
}

std::uint64_t TraceFileWriter::events_written() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::uint64_t TraceFileWriter::bytes_written() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

void TraceFileWriter::flush_locked() {
  last_flush_ = std::chrono::steady_clock::now();
  if (!file_) return;
  blocks_.close_block(buffer_);
  if (buffer_.empty()) return;
  write_locked(buffer_);
  buffer_.clear();
}

void TraceFileWriter::write_locked(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    throw std::runtime_error("cannot write trace file '" + path_ + "': " + std::strerror(errno));
  bytes_ += bytes.size();
}

void TraceFileWriter::throw_timer_error_locked() {
  if (!timer_error_.empty()) throw std::runtime_error(timer_error_);
}

// Wakes every max_delay and writes what waits, so no record stays in memory longer than that however long the
// producer pauses.
void TraceFileWriter::run_timer() {
  std::unique_lock lock(mutex_);
  while (!timer_stopping_) {
    timer_wake_.wait_for(lock, options_.max_delay);
    if (timer_stopping_ || (buffer_.empty() && blocks_.events() == 0) || !file_) continue;
    try {
      flush_locked();
    } catch (const std::exception& error) {
      timer_error_ = error.what();
      return;  // the writer is broken: the next call says so
    }
  }
}

void TraceFileWriter::stop_timer() {
  {
    std::lock_guard lock(mutex_);
    timer_stopping_ = true;
  }
  timer_wake_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
}

}  // namespace shardscope
