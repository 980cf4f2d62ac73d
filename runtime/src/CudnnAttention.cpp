//===- CudnnAttention.cpp - cuDNN's fused attention through its graph API -===//
//
// The graph is cuDNN's own SDPA pattern, node for node, in the plan's
// layouts ([B, H, T, D] views, the head dim contiguous), fp32 inside:
//
//   forward:  S = Q K^T; S *= scale; [causal: S = row >= col ? S : -inf];
//             M = max S; E = exp(S - M); Z = sum E; lse = M + log Z;
//             P = E / Z (16-bit); O = P V
//   backward: delta = sum(dO * O); P = exp(S * scale - lse) [masked];
//             dV = P^T dO; dP = dO V^T; dS = P (dP - delta) scale;
//             dK = dS^T Q; dQ = dS K
//
// With fewer key/value heads than query heads, the products broadcast K
// and V over each group, and the backward sums dK and dV over it.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"

#include "dsc/AttentionAlgorithms.h"

#if DSRUN_HAVE_CUDNN
#include <cudnn_graph.h>
#endif

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace plan = dsc::plan;

namespace dsrun {

#if !DSRUN_HAVE_CUDNN

std::string cudnnAttention(const plan::Kernel &, const KernelOperands &,
                           const KernelContext &, cudaStream_t) {
  return "dsrun was built without cuDNN's headers (cudnn_graph.h)";
}
std::string cudnnAttentionLibrary() {
  return "none: dsrun was built without cuDNN's headers (cudnn_graph.h)";
}

#else

namespace {

/// The backend API, resolved from the library dsrun loaded.
struct Library {
  void *Handle = nullptr;
  std::string Path, Error;
  size_t Version = 0;
  decltype(&::cudnnGetVersion) getVersion = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnSetStream) setStream = nullptr;
  decltype(&::cudnnGetErrorString) errorString = nullptr;
  decltype(&::cudnnGetLastErrorString) lastError = nullptr;
  decltype(&::cudnnBackendCreateDescriptor) createDesc = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) destroyDesc = nullptr;
  decltype(&::cudnnBackendSetAttribute) setAttr = nullptr;
  decltype(&::cudnnBackendGetAttribute) getAttr = nullptr;
  decltype(&::cudnnBackendFinalize) finalize = nullptr;
  decltype(&::cudnnBackendExecute) execute = nullptr;
  cudnnHandle_t Cudnn = nullptr;

  bool ok() const { return Error.empty(); }
  /// What went wrong with the last call, from cuDNN itself.
  std::string why(cudnnStatus_t St) const {
    std::string Out = errorString ? errorString(St) : "cuDNN error";
    if (lastError) {
      char Msg[512] = {};
      lastError(Msg, sizeof(Msg));
      if (Msg[0])
        Out += std::string(": ") + Msg;
    }
    return Out;
  }
};

template <class F> bool resolve(void *H, const char *Name, F &Fn) {
  Fn = reinterpret_cast<F>(dlsym(H, Name));
  return Fn != nullptr;
}

/// cuDNN 9's graph API with the generic SDPA pattern: 9.0 or newer.
constexpr size_t MinVersion = 90000;

Library &library() {
  static Library L;
  static std::once_flag Once;
  std::call_once(Once, [] {
    const char *Env = std::getenv("DSRUN_CUDNN_LIBRARY");
    L.Path = Env && *Env ? Env : "libcudnn.so.9";
    L.Handle = dlopen(L.Path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!L.Handle) {
      const char *E = dlerror();
      L.Error = "cannot load " + L.Path + (E ? std::string(": ") + E : "");
      return;
    }
    bool All = resolve(L.Handle, "cudnnGetVersion", L.getVersion) &&
               resolve(L.Handle, "cudnnCreate", L.create) &&
               resolve(L.Handle, "cudnnSetStream", L.setStream) &&
               resolve(L.Handle, "cudnnGetErrorString", L.errorString) &&
               resolve(L.Handle, "cudnnBackendCreateDescriptor",
                       L.createDesc) &&
               resolve(L.Handle, "cudnnBackendDestroyDescriptor",
                       L.destroyDesc) &&
               resolve(L.Handle, "cudnnBackendSetAttribute", L.setAttr) &&
               resolve(L.Handle, "cudnnBackendGetAttribute", L.getAttr) &&
               resolve(L.Handle, "cudnnBackendFinalize", L.finalize) &&
               resolve(L.Handle, "cudnnBackendExecute", L.execute);
    resolve(L.Handle, "cudnnGetLastErrorString", L.lastError); // 9.0 on.
    if (!All) {
      L.Error = L.Path + " lacks cuDNN's backend API";
      return;
    }
    L.Version = L.getVersion();
    if (L.Version < MinVersion) {
      L.Error = L.Path + " is cuDNN " + std::to_string(L.Version) +
                "; dsrun's attention graph needs cuDNN 9";
      return;
    }
    if (cudnnStatus_t St = L.create(&L.Cudnn); St != CUDNN_STATUS_SUCCESS)
      L.Error = "cudnnCreate failed: " + L.why(St);
  });
  return L;
}

/// A backend descriptor, destroyed with its owner.
struct Desc {
  cudnnBackendDescriptor_t D = nullptr;
  Desc() = default;
  Desc(const Desc &) = delete;
  Desc &operator=(const Desc &) = delete;
  ~Desc() {
    if (D)
      library().destroyDesc(D);
  }
};
using DescPtr = std::shared_ptr<Desc>;

/// Builds one operation graph; the first error sticks and stops the rest.
class Graph {
public:
  explicit Graph(Library &L) : L(L) {}
  std::string Error;

  DescPtr make(cudnnBackendDescriptorType_t T) {
    auto P = std::make_shared<Desc>();
    if (Error.empty())
      check(L.createDesc(T, &P->D), "create descriptor");
    Owned.push_back(P);
    return P;
  }
  void set(const DescPtr &D, cudnnBackendAttributeName_t A,
           cudnnBackendAttributeType_t T, int64_t N, const void *V) {
    if (Error.empty())
      check(L.setAttr(D->D, A, T, N, V), "set attribute");
  }
  void setDesc(const DescPtr &D, cudnnBackendAttributeName_t A,
               const DescPtr &V) {
    set(D, A, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &V->D);
  }
  void done(const DescPtr &D, const char *What) {
    if (Error.empty())
      check(L.finalize(D->D), What);
  }

  /// A tensor: Uid 0 makes a virtual one (of the next internal id).
  DescPtr tensor(int64_t Uid, std::vector<int64_t> Dims,
                 std::vector<int64_t> Strides, cudnnDataType_t Type,
                 bool ByValue = false) {
    DescPtr T = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    bool Virtual = Uid == 0;
    if (Virtual)
      Uid = NextVirtual++;
    int64_t Align = 16;
    set(T, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &Type);
    set(T, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(Dims.size()),
        Dims.data());
    set(T, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(Strides.size()),
        Strides.data());
    set(T, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &Uid);
    set(T, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &Align);
    if (Virtual) {
      bool True = true;
      set(T, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &True);
    }
    if (ByValue) {
      bool True = true;
      set(T, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &True);
    }
    done(T, "tensor");
    return T;
  }
  /// A virtual tensor of Dims, dense.
  DescPtr temp(const std::vector<int64_t> &Dims,
               cudnnDataType_t Type = CUDNN_DATA_FLOAT) {
    return tensor(0, Dims, dense(Dims), Type);
  }
  static std::vector<int64_t> dense(const std::vector<int64_t> &Dims) {
    std::vector<int64_t> S(Dims.size(), 1);
    for (size_t I = Dims.size() - 1; I-- > 0;)
      S[I] = S[I + 1] * Dims[I + 1];
    return S;
  }

  /// Y = Mode(X, B) (T: BINARY_SELECT's condition).
  void pointwise(cudnnPointwiseMode_t Mode, const DescPtr &X,
                 const DescPtr &B, const DescPtr &Y,
                 cudnnDataType_t Math = CUDNN_DATA_FLOAT,
                 const DescPtr &T = nullptr, int64_t Axis = -1) {
    DescPtr P = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(P, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &Mode);
    set(P, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &Math);
    if (Axis >= 0)
      set(P, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &Axis);
    done(P, "pointwise");
    DescPtr Op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    setDesc(Op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, P);
    setDesc(Op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, X);
    if (B)
      setDesc(Op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, B);
    if (T)
      setDesc(Op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, T);
    setDesc(Op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Y);
    float One = 1;
    set(Op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &One);
    if (B)
      set(Op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &One);
    done(Op, "pointwise operation");
    Ops.push_back(Op);
  }
  void matmul(const DescPtr &A, const DescPtr &B, const DescPtr &C) {
    DescPtr M = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t F = CUDNN_DATA_FLOAT;
    set(M, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &F);
    done(M, "matmul");
    DescPtr Op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    setDesc(Op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, A);
    setDesc(Op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, B);
    setDesc(Op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, C);
    setDesc(Op, CUDNN_ATTR_OPERATION_MATMUL_DESC, M);
    done(Op, "matmul operation");
    Ops.push_back(Op);
  }
  void reduce(cudnnReduceTensorOp_t How, const DescPtr &X, const DescPtr &Y) {
    DescPtr R = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t F = CUDNN_DATA_FLOAT;
    set(R, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
        &How);
    set(R, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &F);
    done(R, "reduction");
    DescPtr Op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    setDesc(Op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, X);
    setDesc(Op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Y);
    setDesc(Op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, R);
    done(Op, "reduction operation");
    Ops.push_back(Op);
  }
  void reshape(const DescPtr &X, const DescPtr &Y) {
    DescPtr Op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    setDesc(Op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, X);
    setDesc(Op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, Y);
    done(Op, "reshape operation");
    Ops.push_back(Op);
  }

  /// The operation graph, and the first of cuDNN's heuristic engine
  /// configurations that compiles with at most MaxWorkspace bytes.
  DescPtr compile(uint64_t MaxWorkspace, int64_t &Workspace) {
    if (!Error.empty())
      return nullptr;
    DescPtr G = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    std::vector<cudnnBackendDescriptor_t> List;
    for (const DescPtr &Op : Ops)
      List.push_back(Op->D);
    set(G, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        int64_t(List.size()), List.data());
    set(G, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &L.Cudnn);
    done(G, "operation graph");
    DescPtr H = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    setDesc(H, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, G);
    cudnnBackendHeurMode_t Mode = CUDNN_HEUR_MODE_A;
    set(H, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &Mode);
    done(H, "engine heuristics");
    if (!Error.empty())
      return nullptr;
    int64_t Count = 0;
    check(L.getAttr(H->D, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &Count, nullptr),
          "heuristic results");
    if (!Error.empty())
      return nullptr;
    if (Count == 0) {
      Error = "cuDNN offers no engine for this attention graph";
      return nullptr;
    }
    std::vector<DescPtr> Configs;
    std::vector<cudnnBackendDescriptor_t> Raw;
    for (int64_t I = 0; I < Count; ++I) {
      Configs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      Raw.push_back(Configs.back()->D);
    }
    int64_t Got = 0;
    check(L.getAttr(H->D, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, Count, &Got, Raw.data()),
          "heuristic results");
    std::string Declined;
    for (int64_t I = 0; I < Got && Error.empty(); ++I) {
      auto Plan = std::make_shared<Desc>();
      if (L.createDesc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &Plan->D) !=
          CUDNN_STATUS_SUCCESS)
        continue;
      L.setAttr(Plan->D, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                1, &L.Cudnn);
      L.setAttr(Plan->D, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Raw[size_t(I)]);
      if (cudnnStatus_t St = L.finalize(Plan->D); St != CUDNN_STATUS_SUCCESS) {
        Declined = L.why(St);
        continue;
      }
      int64_t Bytes = 0, N = 0;
      L.getAttr(Plan->D, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                CUDNN_TYPE_INT64, 1, &N, &Bytes);
      if (uint64_t(Bytes) > MaxWorkspace) {
        Declined = "its engine needs " + std::to_string(Bytes) +
                   " bytes of workspace; the plan leaves " +
                   std::to_string(MaxWorkspace);
        continue;
      }
      Workspace = Bytes;
      return Plan;
    }
    if (Error.empty())
      Error = "no engine of cuDNN's " + std::to_string(Got) +
              " compiles this attention graph (" + Declined + ")";
    return nullptr;
  }

private:
  void check(cudnnStatus_t St, const char *What) {
    if (St != CUDNN_STATUS_SUCCESS && Error.empty())
      Error = std::string(What) + ": " + L.why(St);
  }

  Library &L;
  std::vector<DescPtr> Owned, Ops;
  int64_t NextVirtual = 1000;
};

// The tensors dsrun binds at each launch.
enum Uid : int64_t {
  UQ = 1, UK, UV, UO, UStats, UDo, UDq, UDk, UDv, UScale, UNegInf, UOne,
  UDelta, UDqAccum
};

/// A compiled graph and the workspace it was compiled for.
struct Compiled {
  DescPtr Plan;
  int64_t Workspace = 0;
  std::string Error; ///< Why cuDNN declined the shape (kept: asked once).
};

std::mutex CacheMutex;
std::map<std::vector<int64_t>, Compiled> Cache;

std::vector<int64_t> swapLast(std::vector<int64_t> V) {
  std::swap(V[2], V[3]);
  return V;
}

/// The graph of kernel K (attention or attention-grad).
Compiled compile(const plan::Kernel &K, const plan::AttentionAttrs &A,
                 bool Grad, cudnnDataType_t Io, uint64_t MaxWorkspace) {
  Library &L = library();
  Graph Gr(L);
  int64_t B = A.Batch, Hq = A.QHeads, Hkv = A.KVHeads, T = A.QLen,
          S = A.KVLen, D = A.HeadDim;
  size_t At = Grad ? 1 : 0;
  auto Strides = [](const plan::TensorRef &R) { return R.Strides; };
  std::vector<int64_t> ScoreDims = {B, Hq, T, S}, RowDims = {B, Hq, T, 1};
  std::vector<int64_t> RowStrides = {Hq * T, T, 1, 1};
  std::vector<int64_t> Scalar = {1, 1, 1, 1};
  DescPtr Q = Gr.tensor(UQ, {B, Hq, T, D}, Strides(K.Inputs[At]), Io);
  // K^T and V^T: the stored K and V seen with their last two dims swapped.
  DescPtr Kt = Gr.tensor(UK, {B, Hkv, D, S}, swapLast(Strides(K.Inputs[At + 1])),
                         Io);
  DescPtr Scale = Gr.tensor(UScale, Scalar, Scalar, CUDNN_DATA_FLOAT, true);
  DescPtr NegInf = Gr.tensor(UNegInf, Scalar, Scalar, CUDNN_DATA_FLOAT, true);
  // The log-sum-exp [B, Hq, T] as cuDNN's stats, a trailing dim of 1.
  std::vector<int64_t> LseStrides = Strides(Grad ? K.Inputs[5] : K.Outputs[1]);
  LseStrides.push_back(1);
  DescPtr Stats = Gr.tensor(UStats, RowDims, LseStrides, CUDNN_DATA_FLOAT);
  // Scaled scores, causally masked (keys after the query get -inf).
  auto Masked = [&](const DescPtr &X) {
    if (!A.Causal)
      return X;
    DescPtr Row = Gr.temp(ScoreDims, CUDNN_DATA_INT32),
            Col = Gr.temp(ScoreDims, CUDNN_DATA_INT32),
            Keep = Gr.temp(ScoreDims, CUDNN_DATA_BOOLEAN), Y = Gr.temp(ScoreDims);
    Gr.pointwise(CUDNN_POINTWISE_GEN_INDEX, X, nullptr, Row, CUDNN_DATA_INT32,
                 nullptr, 2);
    Gr.pointwise(CUDNN_POINTWISE_GEN_INDEX, X, nullptr, Col, CUDNN_DATA_INT32,
                 nullptr, 3);
    Gr.pointwise(CUDNN_POINTWISE_CMP_GE, Row, Col, Keep, CUDNN_DATA_BOOLEAN);
    Gr.pointwise(CUDNN_POINTWISE_BINARY_SELECT, X, NegInf, Y, CUDNN_DATA_FLOAT,
                 Keep);
    return Y;
  };
  DescPtr Scores = Gr.temp(ScoreDims), Scaled = Gr.temp(ScoreDims);
  Gr.matmul(Q, Kt, Scores);
  Gr.pointwise(CUDNN_POINTWISE_MUL, Scores, Scale, Scaled);
  if (!Grad) {
    DescPtr Sm = Masked(Scaled);
    DescPtr Max = Gr.temp(RowDims), Shifted = Gr.temp(ScoreDims),
            E = Gr.temp(ScoreDims), Sum = Gr.temp(RowDims),
            LogSum = Gr.temp(RowDims), P = Gr.temp(ScoreDims, Io);
    Gr.reduce(CUDNN_REDUCE_TENSOR_MAX, Sm, Max);
    Gr.pointwise(CUDNN_POINTWISE_SUB, Sm, Max, Shifted);
    Gr.pointwise(CUDNN_POINTWISE_EXP, Shifted, nullptr, E);
    Gr.reduce(CUDNN_REDUCE_TENSOR_ADD, E, Sum);
    Gr.pointwise(CUDNN_POINTWISE_LOG, Sum, nullptr, LogSum);
    Gr.pointwise(CUDNN_POINTWISE_ADD, Max, LogSum, Stats);
    Gr.pointwise(CUDNN_POINTWISE_DIV, E, Sum, P);
    DescPtr V = Gr.tensor(UV, {B, Hkv, S, D}, Strides(K.Inputs[At + 2]), Io);
    DescPtr O = Gr.tensor(UO, {B, Hq, T, D}, Strides(K.Outputs[0]), Io);
    Gr.matmul(P, V, O);
  } else {
    DescPtr Do = Gr.tensor(UDo, {B, Hq, T, D}, Strides(K.Inputs[0]), Io);
    DescPtr O = Gr.tensor(UO, {B, Hq, T, D}, Strides(K.Inputs[4]), Io);
    DescPtr One = Gr.tensor(UOne, Scalar, Scalar, CUDNN_DATA_FLOAT, true);
    // delta = rowsum(dO * O), kept in the workspace.
    DescPtr DoO = Gr.temp({B, Hq, T, D}), RowSum = Gr.temp(RowDims);
    DescPtr Delta = Gr.tensor(UDelta, RowDims, RowStrides, CUDNN_DATA_FLOAT);
    Gr.pointwise(CUDNN_POINTWISE_MUL, Do, O, DoO);
    Gr.reduce(CUDNN_REDUCE_TENSOR_ADD, DoO, RowSum);
    Gr.pointwise(CUDNN_POINTWISE_MUL, RowSum, One, Delta);
    // P again, from the forward's log-sum-exp.
    DescPtr Centered = Gr.temp(ScoreDims), P = Gr.temp(ScoreDims);
    Gr.pointwise(CUDNN_POINTWISE_SUB, Scaled, Stats, Centered);
    Gr.pointwise(CUDNN_POINTWISE_EXP, Masked(Centered), nullptr, P);
    // P^T and dS^T: the scores seen transposed, in the 16-bit type.
    std::vector<int64_t> TDims = {B, Hq, S, T},
                         TStrides = {Hq * T * S, T * S, 1, S};
    DescPtr Pt = Gr.tensor(0, TDims, TStrides, Io);
    Gr.reshape(P, Pt);
    bool Grouped = Hkv < Hq;
    // dK and dV of each query head, summed over its group where grouped.
    auto GroupSum = [&](Uid U, const plan::TensorRef &R, auto &&Product) {
      DescPtr Out = Gr.tensor(U, {B, Hkv, S, D}, Strides(R), Io);
      if (!Grouped)
        return Product(Out);
      DescPtr Full = Gr.temp({B, Hq, S, D}, Io);
      Product(Full);
      Gr.reduce(CUDNN_REDUCE_TENSOR_ADD, Full, Out);
    };
    GroupSum(UDv, K.Outputs[2], [&](const DescPtr &Y) { Gr.matmul(Pt, Do, Y); });
    DescPtr Vt = Gr.tensor(UV, {B, Hkv, D, S}, swapLast(Strides(K.Inputs[3])),
                           Io);
    DescPtr Dp = Gr.temp(ScoreDims), DpC = Gr.temp(ScoreDims),
            DsU = Gr.temp(ScoreDims), Ds = Gr.temp(ScoreDims);
    Gr.matmul(Do, Vt, Dp);
    Gr.pointwise(CUDNN_POINTWISE_SUB, Dp, Delta, DpC);
    Gr.pointwise(CUDNN_POINTWISE_MUL, DpC, P, DsU);
    Gr.pointwise(CUDNN_POINTWISE_MUL, DsU, Scale, Ds);
    DescPtr Dst = Gr.tensor(0, TDims, TStrides, Io);
    Gr.reshape(Ds, Dst);
    GroupSum(UDk, K.Outputs[1], [&](const DescPtr &Y) { Gr.matmul(Dst, Q, Y); });
    // dQ = dS K: K as stored, from K^T reshaped back.
    DescPtr Kv = Gr.tensor(0, {B, Hkv, S, D}, Strides(K.Inputs[2]), Io);
    Gr.reshape(Kt, Kv);
    // dQ summed in fp32 across the key blocks (atomics), then stored.
    DescPtr Dq = Gr.tensor(UDq, {B, Hq, T, D}, Strides(K.Outputs[0]), Io);
    DescPtr Acc = Gr.tensor(UDqAccum, {B, Hq, T, D}, Graph::dense({B, Hq, T, D}),
                            CUDNN_DATA_FLOAT);
    Gr.matmul(Ds, Kv, Acc);
    Gr.pointwise(CUDNN_POINTWISE_IDENTITY, Acc, nullptr, Dq);
  }
  Compiled C;
  C.Plan = Gr.compile(MaxWorkspace, C.Workspace);
  C.Error = Gr.Error;
  return C;
}

} // namespace

std::string cudnnAttentionLibrary() {
  Library &L = library();
  if (!L.ok())
    return "none (" + L.Error + ")";
  return "cuDNN " + std::to_string(L.Version / 10000) + "." +
         std::to_string(L.Version / 100 % 100) + "." +
         std::to_string(L.Version % 100) + " (" + L.Path + ")";
}

std::string cudnnAttention(const plan::Kernel &K, const KernelOperands &Ops,
                           const KernelContext &C, cudaStream_t S) {
  Library &L = library();
  if (!L.ok())
    return L.Error;
  const plan::AttentionAttrs &A = *K.as<plan::AttentionAttrs>();
  bool Grad = K.kind() == plan::KernelKind::AttentionGrad;
  ElementType Act = Ops.InType[Grad ? 1 : 0];
  cudnnDataType_t Io = Act == ElementType::BF16  ? CUDNN_DATA_BFLOAT16
                       : Act == ElementType::F16 ? CUDNN_DATA_HALF
                                                 : CUDNN_DATA_FLOAT;
  if (Io == CUDNN_DATA_FLOAT)
    return "cuDNN's fused attention runs bf16 or fp16";
  if (!A.Batch || !A.QHeads || !A.QLen || !A.KVLen)
    return "";
  // cuDNN before 9.15.1 computes the backward wrong where the keys do not
  // fill their last 128-row tile (cudnn-frontend pads such shapes with a
  // mask there).
  if (Grad && L.Version < 91501 && A.KVLen % 128)
    return cudnnAttentionLibrary() + " needs " + std::to_string(A.KVLen) +
           " keys to be a multiple of 128 in the backward (9.15.1 does not)";
  // The workspace: the backward's row sums of dO * O and its fp32 dQ;
  // then cuDNN's own.
  uint64_t DeltaBytes = Grad ? plan::attentionDeltaBytes(A) : 0;
  uint64_t AccumBytes = Grad ? plan::cudnnDqBytes(A) : 0;
  if (C.WorkspaceBytes < DeltaBytes + AccumBytes)
    return "cuDNN's attention needs " + std::to_string(DeltaBytes + AccumBytes) +
           " bytes of workspace; the plan has " +
           std::to_string(C.WorkspaceBytes);
  uint64_t Left = C.WorkspaceBytes - DeltaBytes - AccumBytes;
  std::vector<int64_t> Key = {Grad, int64_t(Io), A.Batch, A.QHeads,
                              A.KVHeads, A.QLen, A.KVLen, A.HeadDim,
                              A.Causal, int64_t(Left)};
  for (const std::vector<plan::TensorRef> *Side : {&K.Inputs, &K.Outputs})
    for (const plan::TensorRef &R : *Side)
      Key.insert(Key.end(), R.Strides.begin(), R.Strides.end());
  Compiled *G;
  {
    std::lock_guard<std::mutex> Lock(CacheMutex);
    auto It = Cache.find(Key);
    if (It == Cache.end())
      It = Cache.emplace(Key, compile(K, A, Grad, Io, Left)).first;
    G = &It->second;
  }
  if (!G->Plan)
    return G->Error;
  char *Work = static_cast<char *>(C.Workspace);
  float Scale = float(A.Scale), NegInf = -std::numeric_limits<float>::infinity(),
        One = 1;
  std::vector<int64_t> Uids;
  std::vector<void *> Ptrs;
  auto Bind = [&](Uid U, const void *P) {
    Uids.push_back(U);
    Ptrs.push_back(const_cast<void *>(P));
  };
  size_t At = Grad ? 1 : 0;
  Bind(UQ, Ops.In[At]);
  Bind(UK, Ops.In[At + 1]);
  Bind(UV, Ops.In[At + 2]);
  Bind(UScale, &Scale);
  if (A.Causal)
    Bind(UNegInf, &NegInf);
  if (!Grad) {
    Bind(UO, Ops.Out[0]);
    Bind(UStats, Ops.Out[1]);
  } else {
    Bind(UDo, Ops.In[0]);
    Bind(UO, Ops.In[4]);
    Bind(UStats, Ops.In[5]);
    Bind(UOne, &One);
    Bind(UDelta, Work);
    Bind(UDqAccum, Work + DeltaBytes);
    Bind(UDq, Ops.Out[0]);
    Bind(UDk, Ops.Out[1]);
    Bind(UDv, Ops.Out[2]);
  }
  void *Space = G->Workspace ? Work + DeltaBytes + AccumBytes : nullptr;
  Desc Pack;
  auto Fail = [&](const char *What, cudnnStatus_t St) {
    return std::string("cuDNN's attention: ") + What + ": " + L.why(St);
  };
  if (cudnnStatus_t St =
          L.createDesc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &Pack.D);
      St != CUDNN_STATUS_SUCCESS)
    return Fail("variant pack", St);
  L.setAttr(Pack.D, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
            int64_t(Uids.size()), Uids.data());
  L.setAttr(Pack.D, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
            int64_t(Ptrs.size()), Ptrs.data());
  L.setAttr(Pack.D, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
            &Space);
  if (cudnnStatus_t St = L.finalize(Pack.D); St != CUDNN_STATUS_SUCCESS)
    return Fail("variant pack", St);
  if (cudnnStatus_t St = L.setStream(L.Cudnn, S); St != CUDNN_STATUS_SUCCESS)
    return Fail("cudnnSetStream", St);
  if (cudnnStatus_t St = L.execute(L.Cudnn, G->Plan->D, Pack.D);
      St != CUDNN_STATUS_SUCCESS)
    return Fail("execute", St);
  return "";
}

#endif

} // namespace dsrun
