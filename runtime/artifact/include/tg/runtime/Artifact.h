// The .tgx artifact (schema: runtime/artifact/tgx.fbs, generated header
// tgx_generated.h): the format version, the verifier every consumer runs
// before touching a program, and small helpers over verified programs.
#ifndef TG_RUNTIME_ARTIFACT_H
#define TG_RUNTIME_ARTIFACT_H

#include "tgx_generated.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg::runtime {

/// The format version this runtime reads and tgc writes. Bump it on any
/// incompatible change of tgx.fbs or of the meaning of its fields. This
/// runtime reads exactly this version. History: 1 the first; 2 added the
/// checksum trailer and KernelModule.kernel_operand_bytes (both required);
/// 3 strided GEMM operands; 4 GEMM activations (Gemm.activation, an aux
/// operand), which a reader of 3 would ignore; 5 the bias gradient epilogue
/// and rotary embeddings in attention; 6 Parameter.compute_slot, a copy a
/// reader of 5 would leave unwritten.
constexpr uint32_t kFormatVersion = 6;
/// The oldest version this runtime still reads: version 6 only added
/// Parameter.compute_slot (absent: -1, no copy), so a version 5 artifact is
/// a version 6 one without compute copies and runs as it was compiled (the
/// same run can time an earlier build's step beside this one's).
constexpr uint32_t kOldestFormatVersion = 5;

/// A .tgx file is the FlatBuffers image of tg.tgx.Program (a multiple of 8
/// bytes) followed by a 16-byte trailer:
///   [image][kTrailerMagic, 8 bytes][u64 LE FNV-1a 64 of image + magic]
/// The checksum covers every byte of the file but itself, so any change to
/// the file (not only to a kernel image) is caught before anything is read.
constexpr char kTrailerMagic[8] = {'T', 'G', 'X', 'S', 'U', 'M', '6', '4'};
constexpr std::size_t kTrailerSize = 16;

/// The checksum the trailer of an artifact of `size` bytes (trailer
/// included) must hold: FNV-1a 64 of its first size - 8 bytes.
uint64_t artifactChecksum(const uint8_t *bytes, std::size_t size);

/// Appends the checksum trailer to a finished FlatBuffers image (what tgc
/// writes, and what the runtime tests build by hand).
void sealArtifact(std::vector<uint8_t> &image);

/// Bytes per element of `dtype`; 0 for a value outside the enum.
std::size_t dtypeSize(tgx::DType dtype);

/// Checks that `bytes` is a well-formed artifact this runtime can execute
/// without reading or writing outside its arena: the checksum trailer, the
/// FlatBuffers structure (with the "TGX1" identifier), the format version, every range, slot,
/// parameter (with its tensor-parallel shard), constant and command, and the
/// slots every program must have (step, tokens, targets, loss, grad_norm,
/// lr; and mesh_coordinate if present). On failure returns false and
/// sets `error` to one sentence naming `sourceName`, the field at fault and
/// what to do.
bool verifyArtifact(const uint8_t *bytes, std::size_t size,
                    const std::string &sourceName, std::string &error);

/// The function called `name` beside a verified training step
/// (Program.functions: "eval_step", "logits"), or nullptr.
const tgx::Program *findFunction(const tgx::Program &program, std::string_view name);
/// What to do when an artifact has no "logits" function.
constexpr const char *kNoLogitsHint =
    "tgc writes it into artifacts for one device: compile the model without --mesh "
    "(weights and checkpoints load on any mesh)";

/// The slot called `name`, or nullptr. Slot names are unique in verified
/// programs.
const tgx::Slot *findSlot(const tgx::Program &program, std::string_view name);

/// Elements of a verified slot's shape.
int64_t numElements(const tgx::Slot &slot);

/// The mesh axis whose ranks split the batch: the token slots hold one data
/// rank's rows.
constexpr std::string_view kDataAxis = "data";
/// The optional input slot (I64 [mesh axes]) where the runtime writes the
/// rank's index along each mesh axis when it loads the program.
constexpr const char *kMeshCoordinateSlot = "mesh_coordinate";
/// Devices (ranks) of a verified mesh: the product of its shape.
int64_t meshDevices(const tgx::Mesh &mesh);
/// "data=2 x tensor=2", for messages.
std::string meshText(const tgx::Mesh &mesh);
/// The index of the axis called `name`, or -1.
int64_t findMeshAxis(const tgx::Mesh &mesh, std::string_view name);
/// Ranks are numbered row-major over the mesh's shape (the last axis
/// varies fastest): the rank distance between neighbours along `axis`, and
/// rank `rank`'s index along it.
int64_t meshAxisStride(const tgx::Mesh &mesh, uint32_t axis);
int64_t meshCoordinate(const tgx::Mesh &mesh, int64_t rank, uint32_t axis);

} // namespace tg::runtime

#endif
