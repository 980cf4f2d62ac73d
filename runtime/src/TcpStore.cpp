//===- TcpStore.cpp -------------------------------------------------------===//

#include "TcpStore.h"
#include "Sockets.h"

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <thread>
#include <unistd.h>

namespace dsrun {

namespace {

// c10d::detail::QueryType and the replies this client reads.
enum : uint8_t { Validate = 0, Set = 1, Get = 3, Wait = 6, Ping = 13 };
constexpr uint8_t StopWaiting = 0;
constexpr uint32_t ValidationMagic = 0x3C85F7CE;
// A value larger than this is not a rendezvous blob: the peer is no store.
constexpr uint64_t MaxValueBytes = 64ull << 20;

template <class T> void append(std::string &Out, T Value) {
  char Bytes[sizeof(T)];
  memcpy(Bytes, &Value, sizeof(T)); // Little-endian, as the store's hosts.
  Out.append(Bytes, sizeof(T));
}

void appendString(std::string &Out, const std::string &S) {
  append<uint64_t>(Out, S.size());
  Out += S;
}

int millisecondsLeft(std::chrono::steady_clock::time_point Deadline) {
  auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  Deadline - std::chrono::steady_clock::now())
                  .count();
  return int(std::clamp<long long>(Left, 0, 1 << 30));
}

} // namespace

TcpStoreClient::~TcpStoreClient() {
  if (Fd >= 0)
    close(Fd);
}

bool TcpStoreClient::connect(const std::string &Host, int Port,
                             std::chrono::steady_clock::time_point Deadline,
                             std::string &Error) {
  Where = Host + ":" + std::to_string(Port);
  // The agent may start after its worker: tried until the deadline.
  std::string Why;
  auto Open = [&] {
    while ((Fd = connectTo(Host, Port, std::max(millisecondsLeft(Deadline), 1),
                           Why)) == Unanswered &&
           millisecondsLeft(Deadline))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return Fd >= 0;
  };
  auto Validation = [] {
    std::string Hello;
    append<uint8_t>(Hello, Validate);
    append<uint32_t>(Hello, ValidationMagic);
    return Hello;
  };
  if (!Open()) {
    Error = Fd == Unresolved ? Why + ", the TCPStore's address"
                             : "cannot reach the TCPStore at " + Where +
                                   ": nothing accepted the connection before "
                                   "the rendezvous timeout";
    Fd = -1;
    return false;
  }
  // A store answers the ping with its nonce; anything else is not one.
  // A store older than the ping (PyTorch before its libuv server) closes
  // the connection at the unknown query: then validation alone.
  std::string Hello = Validation();
  uint32_t Nonce = uint32_t(getpid());
  append<uint8_t>(Hello, Ping);
  append<uint32_t>(Hello, Nonce);
  uint32_t Echo = 0;
  auto PingDeadline = std::min(
      Deadline, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  bool Pinged = send(Hello, Error) &&
                receive(&Echo, sizeof(Echo), PingDeadline,
                        "the answer to its ping", Error);
  if (!Pinged) {
    close(Fd);
    Fd = -1;
    if (Open())
      return send(Validation(), Error);
    Fd = -1;
    Error = "the TCPStore at " + Where + " closed the connection at the "
            "ping and could not be reached again";
    return false;
  }
  if (Echo != Nonce) {
    Error = "the TCPStore at " + Where + " answered its ping with " +
            std::to_string(Echo) + ", not " + std::to_string(Nonce) +
            ": another service on that port?";
    return false;
  }
  return true;
}

bool TcpStoreClient::set(const std::string &Key, const std::string &Value,
                         std::string &Error) {
  std::string Message;
  append<uint8_t>(Message, Set);
  appendString(Message, "/" + Key);
  appendString(Message, Value);
  return send(Message, Error);
}

bool TcpStoreClient::get(const std::string &Key, std::string &Value,
                         std::chrono::steady_clock::time_point Deadline,
                         std::string &Error) {
  std::string Message;
  append<uint8_t>(Message, Wait);
  append<uint64_t>(Message, 1);
  appendString(Message, "/" + Key);
  uint8_t Reply = 0xff;
  if (!send(Message, Error) ||
      !receive(&Reply, 1, Deadline, ("key '" + Key + "'").c_str(), Error))
    return false;
  if (Reply != StopWaiting) {
    Error = "the TCPStore at " + Where + " answered a wait for '" + Key +
            "' with " + std::to_string(Reply);
    return false;
  }
  Message.clear();
  append<uint8_t>(Message, Get);
  appendString(Message, "/" + Key);
  uint64_t Size = 0;
  if (!send(Message, Error) ||
      !receive(&Size, sizeof(Size), Deadline, "a value's size", Error))
    return false;
  if (Size > MaxValueBytes) {
    Error = "the TCPStore at " + Where + " gave '" + Key + "' " +
            std::to_string(Size) + " bytes: another service on that port?";
    return false;
  }
  Value.resize(Size);
  return receive(Value.data(), Size, Deadline, "a value", Error);
}

bool TcpStoreClient::send(const std::string &Message, std::string &Error) {
  if (sendAll(Fd, Message.data(), Message.size()))
    return true;
  Error = "the TCPStore at " + Where + " closed the connection";
  return false;
}

bool TcpStoreClient::receive(void *Data, size_t Size,
                             std::chrono::steady_clock::time_point Deadline,
                             const char *What, std::string &Error) {
  if (receiveAll(Fd, Data, Size, std::max(millisecondsLeft(Deadline), 1)))
    return true;
  Error = "no " + std::string(What) + " from the TCPStore at " + Where +
          " before the rendezvous timeout (or it closed the connection)";
  return false;
}

} // namespace dsrun
