//===- TcpStore.h - A client of PyTorch's c10d TCPStore ---------*- C++ -*-===//
//
// torchrun's agent serves a TCPStore at MASTER_ADDR:MASTER_PORT and tells
// its workers to use it (TORCHELASTIC_USE_AGENT_STORE), so the port is
// taken: a worker cannot listen there. dsrun then joins the store as a
// client, speaking the store's wire protocol as PyTorch's own client does
// (torch/csrc/distributed/c10d/TCPStore.cpp, read against PyTorch 2.11):
// every message is a one-byte query type and its arguments; a string is a
// little-endian uint64 length and its bytes; the client prefixes keys with
// "/".
//
//   on connect  VALIDATE, uint32 0x3C85F7CE; PING, uint32 n -> uint32 n
//               (a store that closes at the ping, older than it, is
//               joined again with the validation alone)
//   set         SET, key, value
//   wait        WAIT, uint64 count, keys -> one byte, STOP_WAITING (0)
//   get         GET, key -> value (after a wait: a missing key ends the
//               connection)
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TCPSTORE_H
#define DSRUN_TCPSTORE_H

#include <chrono>
#include <string>

namespace dsrun {

class TcpStoreClient {
public:
  TcpStoreClient() = default;
  TcpStoreClient(const TcpStoreClient &) = delete;
  TcpStoreClient &operator=(const TcpStoreClient &) = delete;
  ~TcpStoreClient();

  /// Connects to the store at Host:Port, retrying until Deadline (the
  /// agent may start after its worker), and checks that a store answers:
  /// the validation, then a ping that must come back with its nonce (a
  /// store that closes the connection at it is joined again without).
  /// Error names the address and what failed.
  bool connect(const std::string &Host, int Port,
               std::chrono::steady_clock::time_point Deadline,
               std::string &Error);

  /// Sets Key (without the "/" the client adds) to Value.
  bool set(const std::string &Key, const std::string &Value,
           std::string &Error);

  /// Waits until Key is set, at most until Deadline, then reads it.
  bool get(const std::string &Key, std::string &Value,
           std::chrono::steady_clock::time_point Deadline, std::string &Error);

private:
  int Fd = -1;
  std::string Where; ///< "host:port", for messages.

  bool send(const std::string &Message, std::string &Error);
  bool receive(void *Data, size_t Size,
               std::chrono::steady_clock::time_point Deadline,
               const char *What, std::string &Error);
};

} // namespace dsrun

#endif
