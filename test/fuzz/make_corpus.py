#!/usr/bin/env python3
"""Regenerates the binary seeds of the fuzz corpus (corpus/artifact (CPU and CUDA),
corpus/checkpoint, corpus/safetensors, corpus/tokens) after a format change.
The JSON and MLIR seeds are written by hand. Needs a built tgc and tgrun
(default build/bin) and flatc:
    test/fuzz/make_corpus.py [BUILD_BIN_DIR]
The artifact is a tiny GPT-2 training step (corpus/model_config/gpt2-micro.json,
batch 1, sequence 4)."""
import copy, json, os, random, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build', 'bin')
SCHEMA = os.path.join(ROOT, 'runtime', 'artifact', 'tgx.fbs')
C = os.path.join(HERE, 'corpus')
TRAIN = {"batch_size": 1, "seq_len": 4, "seed": 1, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                       "weight_decay": 0.1},
         "grad_clip_norm": 1.0,
         "lr_schedule": {"type": "cosine", "warmup_steps": 1, "min_lr": 3e-4, "decay_steps": 10},
         "micro_batches": 1}
TRAILER = b'TGXSUM64'


def fnv(data, h=0xcbf29ce484222325):
    for x in data:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h


def seal(image):
    image += TRAILER
    return image + struct.pack('<Q', fnv(image))


def flatc_to_json(tmp, tgx):
    subprocess.check_call(['flatc', '--json', '--raw-binary', '--strict-json', '-o', tmp,
                           SCHEMA, '--', tgx])
    return json.load(open(os.path.join(tmp, os.path.basename(tgx)[:-4] + '.json')))


def flatc_to_binary(tmp, program):
    path = os.path.join(tmp, 'p.json')
    json.dump(program, open(path, 'w'))
    subprocess.check_call(['flatc', '-b', '-o', tmp, SCHEMA, path])
    return open(os.path.join(tmp, 'p.tgx'), 'rb').read()


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)
    print(f'{os.path.relpath(path, ROOT)}: {len(data)} bytes')


def safetensors(tensors, meta=None, header_delta=0, trailing=b''):
    header, data = {}, b''
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    return struct.pack('<Q', len(text) + header_delta) + text + data + trailing


def raw_safetensors(header_text, data):
    return struct.pack('<Q', len(header_text)) + header_text + data


def checkpoint_checksum(header, data, meta):
    """tg.checksum as runtime/api/Checkpoint.cpp computes it."""
    h = 0xcbf29ce484222325
    for name in sorted(header):
        t = header[name]
        begin, end = t['data_offsets']
        h = fnv(name.encode() + b'\0', h)
        h = fnv(t['dtype'].encode() + b'\0', h)
        h = fnv(struct.pack('<Q', len(t['shape'])), h)
        for d in t['shape']:
            h = fnv(struct.pack('<q', d), h)
        h = fnv(data[begin:end], h)
    for k in sorted(meta):
        if k != 'tg.checksum':
            h = fnv(k.encode() + b'\0', h)
            h = fnv(meta[k].encode() + b'\0', h)
    return '%016x' % h


# A stand-in for a CUDA module's PTX: the verifier checks only the image's
# checksum, and the seeds stay small.
PTX = b'.version 8.0\n.target sm_90a\n'


def stand_in_ptx(program):
    program['modules'][0]['image'] = list(PTX)
    program['modules'][0]['image_fnv1a64'] = fnv(PTX)


def keep_first_commands(program, count):
    """The first `count` commands only: a short program verifies faster, so
    the fuzzer mutates it at a higher rate."""
    program['commands'] = program['commands'][:count]
    for c in program['commands']:
        c['awaits'] = [a for a in c.get('awaits', []) if a < count]


def short_cuda(tmp, model, train, *flags):
    """The micro model's CUDA training step (tgc `flags`) without its
    functions, its first 24 commands, with a stand-in PTX image."""
    tgx = os.path.join(tmp, 'micro-cuda.tgx')
    subprocess.check_call([os.path.join(BIN, 'tgc'), 'compile', model, '--train', train,
                           '--target', 'cuda', *flags, '-o', tgx])
    program = flatc_to_json(tmp, tgx)
    stand_in_ptx(program)
    program.pop('functions', None)
    keep_first_commands(program, 24)
    return program


def main():
    tmp = tempfile.mkdtemp(prefix='tg-fuzz-corpus-')
    model = os.path.join(C, 'model_config', 'gpt2-micro.json')
    train = os.path.join(tmp, 'train.json')
    json.dump(TRAIN, open(train, 'w'))
    tgx = os.path.join(tmp, 'micro.tgx')
    subprocess.check_call([os.path.join(BIN, 'tgc'), 'compile', model, '--train', train,
                           '-o', tgx])
    raw = open(tgx, 'rb').read()
    program = flatc_to_json(tmp, tgx)
    if raw[-16:-8] != TRAILER:
        sys.exit(tgx + ': no checksum trailer: build tgc and tgrun from this tree first')
    write(os.path.join(HERE, 'data', 'micro.tgx'), raw)

    # Artifact variants with a 64-byte stand-in for the kernel image: the
    # verifier only checks the image's checksum, and they stay small.
    small = copy.deepcopy(program)
    image = b'\x7fELF' + bytes(60)
    small['modules'][0]['image'] = list(image)
    small['modules'][0]['image_fnv1a64'] = fnv(image)
    # The functions beside the step (eval_step, logits) share the modules.
    for function in small.get('functions', []):
        function['modules'] = small['modules']
    small_tgx = seal(flatc_to_binary(tmp, small))
    write(os.path.join(C, 'artifact', 'small-image.tgx'), small_tgx)
    write(os.path.join(C, 'artifact', 'truncated.tgx'), small_tgx[:2048])
    # The first 24 commands only.
    short = copy.deepcopy(small)
    # (small-image.tgx keeps the functions beside the step.)
    short.pop('functions', None)
    keep_first_commands(short, 24)
    write(os.path.join(C, 'artifact', 'short.tgx'), seal(flatc_to_binary(tmp, short)))
    bad = copy.deepcopy(short)
    bad['commands'][2]['kernel'] = 1  # a kernel command pointing at another kernel
    write(os.path.join(C, 'artifact', 'bad-operands.tgx'), seal(flatc_to_binary(tmp, bad)))
    old = copy.deepcopy(short)
    old['format_version'] = 1
    old['modules'][0].pop('kernel_operand_bytes', None)
    write(os.path.join(C, 'artifact', 'short-v1.tgx'), flatc_to_binary(tmp, old))

    # A CUDA artifact (PTX module with its launches), short and with a stand-in
    # PTX image like the CPU ones.
    cuda = short_cuda(tmp, model, train)
    write(os.path.join(C, 'artifact', 'short-cuda.tgx'), seal(flatc_to_binary(tmp, cuda)))
    # bf16: the parameters' compute copies (Parameter.compute_slot, format
    # version 6).
    bf16 = short_cuda(tmp, model, train, '--dtype=bf16')
    assert all(p.get('compute_slot', -1) >= 0 for p in bf16['parameters']), \
        'expected a compute copy of every parameter'
    write(os.path.join(C, 'artifact', 'short-bf16-cuda.tgx'), seal(flatc_to_binary(tmp, bf16)))

    # The runtime's flash attention (--cuda-attention=flash: bf16, head dim 64):
    # the Attention commands of such a CUDA artifact alone, forward and
    # gradient, the seed for the verifier's checks of them.
    flash_model = os.path.join(tmp, 'flash.json')
    json.dump(dict(json.load(open(model)), n_embd=64, n_head=1), open(flash_model, 'w'))
    flash_tgx = os.path.join(tmp, 'micro-flash.tgx')
    subprocess.check_call([os.path.join(BIN, 'tgc'), 'compile', flash_model, '--train', train,
                           '--target', 'cuda', '--dtype=bf16', '--cuda-attention=flash',
                           '-o', flash_tgx])
    flash = flatc_to_json(tmp, flash_tgx)
    stand_in_ptx(flash)
    flash.pop('functions', None)
    flash['commands'] = [dict(c, awaits=[]) for c in flash['commands']
                         if c.get('kind') == 'Attention']
    assert len(flash['commands']) == 2, 'expected a forward and a gradient'
    write(os.path.join(C, 'artifact', 'attention-cuda.tgx'), seal(flatc_to_binary(tmp, flash)))
    # The same with a rotary position embedding inside (format version 5):
    # the 32 frequencies of head dim 64.
    for c in flash['commands']:
        c['attention']['rope_frequencies'] = [10000.0 ** (-2 * i / 64) for i in range(32)]
    write(os.path.join(C, 'artifact', 'attention-rope-cuda.tgx'),
          seal(flatc_to_binary(tmp, flash)))
    # Through cuDNN's fused attention (--cuda-attention=cudnn): the library.
    for c in flash['commands']:
        del c['attention']['rope_frequencies']
        c['attention']['library'] = 'Cudnn'
    write(os.path.join(C, 'artifact', 'attention-cudnn-cuda.tgx'),
          seal(flatc_to_binary(tmp, flash)))

    # Tokens.
    random.seed(1)
    tokens = os.path.join(C, 'tokens', 'valid.bin')
    write(tokens, struct.pack('<64H', *[random.randrange(8) for _ in range(64)]))
    write(os.path.join(C, 'tokens', 'large-ids.bin'),
          struct.pack('<16H', *[random.choice([0, 1, 65535, 50256, 7]) for _ in range(16)]))
    write(os.path.join(C, 'tokens', 'odd.bin'), b'\x01\x00\x02')
    write(os.path.join(C, 'tokens', 'one-token.bin'), b'\x05\x00')

    # Checkpoints of the micro artifact, by tgrun (from the same build as tgc,
    # so it reads what tgc wrote; checkpoints do not depend on the format).
    ckdir = os.path.join(tmp, 'ck')
    subprocess.check_call([os.path.join(BIN, 'tgrun'), tgx,
                           '--data', tokens, '--steps', '2', '--threads', '1',
                           '--checkpoint-dir', ckdir], stdout=subprocess.DEVNULL)
    ck = open(os.path.join(ckdir, sorted(os.listdir(ckdir))[-1]), 'rb').read()
    n = struct.unpack('<Q', ck[:8])[0]
    header = json.loads(ck[8:8 + n])
    data = ck[8 + n:]
    meta = header.pop('__metadata__')
    assert checkpoint_checksum(header, data, meta) == meta["tg.checksum"], \
        'the checkpoint checksum (checkpointChecksum) changed: update checkpoint_checksum here'
    d = os.path.join(C, 'checkpoint')
    write(os.path.join(d, 'valid.safetensors'), ck)

    def variant(name, **changes):
        m = dict(meta, **changes)
        m['tg.checksum'] = checkpoint_checksum(header, data, m)
        tensors = [(k, v['dtype'], v['shape'], data[v['data_offsets'][0]:v['data_offsets'][1]])
                   for k, v in sorted(header.items(), key=lambda kv: kv[1]['data_offsets'][0])]
        write(os.path.join(d, name), safetensors(tensors, m))
    variant('step-int64-max.safetensors', **{'tg.step': '9223372036854775807',
                                             'tg.data_position': '9223372036854775807'})
    variant('step-negative.safetensors', **{'tg.step': '-1'})
    variant('other-program.safetensors', **{'tg.program': '0000000000000000'})
    flipped = bytearray(ck)
    flipped[-5] ^= 0x40
    write(os.path.join(d, 'bad-checksum.safetensors'), bytes(flipped))
    write(os.path.join(d, 'truncated.safetensors'), ck[:len(ck) // 2])

    # Safetensors: valid files and the broken kinds of issue 8.
    d = os.path.join(C, 'safetensors')
    f32 = lambda *v: struct.pack('<%df' % len(v), *v)
    write(os.path.join(d, 'two.safetensors'),
          safetensors([("a", "F32", [2, 2], f32(1, 2, 3, 4)), ("b", "BF16", [3], b'\x80\x3f' * 3)],
                      {"format": "pt"}))
    write(os.path.join(d, 'dtypes.safetensors'), safetensors([
        ("f64", "F64", [1], struct.pack('<d', 1.5)), ("f16", "F16", [2], b'\x00\x3c\x00\xc0'),
        ("i64", "I64", [1], struct.pack('<q', -7)), ("i32", "I32", [], struct.pack('<i', 3)),
        ("u8", "U8", [0], b''), ("b", "BOOL", [2], b'\x01\x00'), ("i8", "I8", [1], b'\xff'),
        ("i16", "I16", [1], b'\x01\x80'), ("u16", "U16", [1], b'\xff\xff')]))
    write(os.path.join(d, 'header-short.safetensors'),
          safetensors([("a", "F32", [2], f32(1, 2))], header_delta=-1))
    write(os.path.join(d, 'trailing.safetensors'),
          safetensors([("a", "F32", [2], f32(1, 2))], trailing=b'\0\0\0\0'))
    write(os.path.join(d, 'duplicate.safetensors'), raw_safetensors(
        b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(1, 2)))
    write(os.path.join(d, 'gap.safetensors'), raw_safetensors(
        b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        b'"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}', f32(1, 2, 3)))
    write(os.path.join(d, 'huge-shape.safetensors'), raw_safetensors(
        b'{"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}',
        f32(1, 2)))


if __name__ == '__main__':
    main()
