"""Client samples stored compactly (data/samples.py) read exactly as the padded float tensor they
replace, for every way the engine indexes them; a built image run stores uint8, unpadded."""
import torch
from conftest import make_cfg

from fedcluster.data.samples import ClientSamples, ImageDecode


def padded_reference(pieces, decode):
    """The old layout: decoded inputs, zero-padded to the largest client."""
    width = max(max(len(p) for p in pieces), 1)
    out = torch.zeros(len(pieces), width, *pieces[0].shape[1:])
    for k, p in enumerate(pieces):
        out[k, :len(p)] = decode(p) if decode is not None else p
    return out


def uneven_images(sizes=(5, 0, 3, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (n, 2, 3, 3), dtype=torch.uint8, generator=g) for n in sizes]


def every_read(x):
    """The index patterns the engine uses (gradient_modes, forward, assemble, algorithms)."""
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, x.shape[1], (4, 6), generator=g)
    rows = torch.tensor([2, 0, 3, 1])
    mask = torch.arange(x.shape[1])[None, :] < torch.tensor([5, 0, 3, 7])[:, None]
    has = torch.tensor([True, False, True, True])   # a mask of clients (evaluation's clients with samples)
    return [x[0, idx[0]], x[rows[:, None], idx], x[3, :7], x[2, :1], x[rows], x[1], x[0, 0],
            x[mask], x[2, 1:3], x[3, :5, 1, 0, 0], x[:], x[has]]


def test_every_read_equals_the_padded_decoded_tensor():
    pieces = uneven_images()
    for decode in (ImageDecode(), ImageDecode(torch.tensor([0.3, 0.5]).view(2, 1, 1),
                                              torch.tensor([0.2, 0.4]).view(2, 1, 1))):
        x = ClientSamples.of_clients(pieces, decode)
        ref = padded_reference(pieces, decode)
        assert x.shape == ref.shape and x.dtype == torch.float32
        for got, want in zip(every_read(x), every_read(ref)):
            assert got.dtype == want.dtype and torch.equal(got, want)   # bit-identical, zeros at padding


def test_samples_stored_as_inputs_are_read_unchanged_and_cast_once():
    g = torch.Generator().manual_seed(2)
    pieces = [torch.randn(n, 4, generator=g) for n in (2, 5, 1)]
    x = ClientSamples.of_clients(pieces)
    ref = padded_reference(pieces, None)
    assert torch.equal(x[torch.tensor([[0], [1], [2]]), torch.tensor([[1, 0], [4, 2], [0, 3]])],
                       ref[torch.tensor([[0], [1], [2]]), torch.tensor([[1, 0], [4, 2], [0, 3]])])
    half = x.to("cpu", torch.float64)
    assert half.storage.dtype == torch.float64 and torch.equal(half[1, :5], ref[1, :5].double())


def test_storage_is_the_real_samples_only_in_their_own_dtype():
    pieces = uneven_images()
    x = ClientSamples.of_clients(pieces, ImageDecode())
    assert x.storage.dtype == torch.uint8
    assert x.nbytes == 15 * 2 * 3 * 3                             # 15 real samples, 1 byte a value
    assert x.to("cpu", torch.float64).storage.dtype == torch.uint8   # moved, not converted
    assert x.to("cpu", torch.float64)[0, :2].dtype == torch.float64
    for k, p in enumerate(pieces):
        assert torch.equal(x.stored(k), p)


def test_real_samples_decode_only_the_chunk_read():
    pieces = uneven_images()
    x = ClientSamples.of_clients(pieces, ImageDecode())
    mask = torch.arange(x.shape[1])[None, :] < torch.tensor([5, 0, 3, 7])[:, None]
    real = x.real(mask)
    assert len(real) == 15 and real.shape == x[mask].shape
    assert torch.equal(real[4:11], x[mask][4:11]) and torch.equal(real[0], x[mask][0])


def test_a_built_image_run_stores_uint8_unpadded_and_trains_on_the_same_inputs(fmnist_root):
    """The run as the CLI builds it: the training split is uint8, one byte per pixel of the real
    samples, and its reads are the images / 255 of the source's pool."""
    from fedcluster.assemble import build
    cfg = make_cfg(["dataset=fashion_mnist", "dataset.distributions=[{rotation: 0}]", f"dataset.root={fmnist_root}",
                    "partition=dirichlet", "partition.num_clients=6", "partition.alpha=0.1", "model=lenet"])
    data = build(cfg)[1].data
    tr = data.train
    assert tr.x.storage.dtype == torch.uint8
    assert tr.x.nbytes == int(tr.n.sum()) * 28 * 28                 # unpadded: no bytes for the padding
    assert tr.x.nbytes < int(tr.n.shape[0] * tr.x.shape[1]) * 28 * 28    # below even padded uint8 (alpha 0.1: uneven)
    k = int(torch.argmax(tr.n))
    assert torch.equal(tr.x[k, :3], tr.x.stored(k)[:3].float() / 255.0)


def test_scoring_every_model_on_stored_samples_in_blocks_equals_the_padded_tensor(monkeypatch):
    """forward.map_shared decodes stored samples a block of chunks at a time, once for every model; the losses
    (whose per-sample labels are read by the chunk's global position) equal those on the decoded padded tensor,
    bit for bit, with blocks far smaller than the data."""
    from fedcluster.local_training import forward
    from fedcluster.models import LeNetCNN
    from fedcluster.models.stacked import init_stack
    g = torch.Generator().manual_seed(3)
    pieces = [torch.randint(0, 256, (n, 1, 28, 28), dtype=torch.uint8, generator=g) for n in (40, 0, 75, 9)]
    x = ClientSamples.of_clients(pieces, ImageDecode())
    ref = padded_reference(pieces, ImageDecode())
    mask = torch.arange(x.shape[1])[None, :] < torch.tensor([40, 0, 75, 9])[:, None]
    y = torch.randint(0, 10, mask.shape, generator=g)
    model_fn = lambda: LeNetCNN((1, 28, 28), 10)
    params = init_stack(model_fn, 3, seed=1, device="cpu", dtype=torch.float32)
    monkeypatch.setattr(forward, "DECODE_BLOCK_BYTES", 40 * 28 * 28 * 4)   # blocks of about one chunk: many blocks
    monkeypatch.setattr(forward, "chunk_size", lambda model, x: 16)
    got = forward.losses_on_clients(model_fn(), "classification", params, x, y, mask)
    want = forward.losses_on_clients(model_fn(), "classification", params, ref, y, mask)
    assert torch.equal(got, want)
