"""Process exit after backward passes on the device.

PyTorch's autograd thread for the device frees a finished backward pass (and the Python objects
it holds) a moment after backward() returns. If the interpreter is finalizing by then, that
thread cannot take the GIL and the process aborts ("terminate called without an active
exception"). torch_trn waits for the thread at exit; these tests make the late free certain.
"""
from helpers import run_python

# SlowToFree is held by the backward pass (queue_callback keeps it until the pass is freed). When
# the autograd thread is the one that frees it, __del__ holds that thread for 0.5 s while the main
# thread exits right away: the free lands inside interpreter shutdown unless exit waits for it.
LATE_FREE = """
    import sys, threading, time
    import torch, torch_trn
    from torch.autograd import Variable

    freed_elsewhere = threading.Event()

    class SlowToFree:
        def __call__(self):
            pass

        def __del__(self):
            if threading.current_thread() is not threading.main_thread():
                freed_elsewhere.set()
                time.sleep(0.5)

    for trial in range(500):
        x = torch.ones(3, device="neuron", requires_grad=True)
        y = (x * 2).sum()
        y.grad_fn.register_hook(lambda gi, go: Variable._execution_engine.queue_callback(SlowToFree()))
        y.backward()
        assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
        del x, y
        if freed_elsewhere.wait(0.05):
            print("LATE FREE at trial", trial, flush=True)
            sys.exit(0)
    print("the autograd thread never freed a pass", flush=True)
"""


def test_exit_waits_for_the_autograd_thread_to_free_the_last_backward_pass():
    r = run_python(LATE_FREE)
    assert "LATE FREE" in r.stdout, f"the scenario did not happen:\n{r.stdout}\n{r.stderr[-2000:]}"
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-2000:]}"
    assert "terminate called" not in r.stderr


def test_exit_right_after_import_is_clean_in_every_mode():
    # The import's own warm-up backward pass must leave nothing that needs the GIL late.
    for mode in ("eager", "adaptive", "compile"):
        r = run_python("import torch_trn", env={"NEURON_MODE": mode})
        assert r.returncode == 0, f"{mode}: exit {r.returncode}\n{r.stderr[-2000:]}"
        assert r.stderr == "", f"{mode}: {r.stderr[-2000:]}"
