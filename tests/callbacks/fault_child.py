"""A user's training script for the fault and stress tests: a tiny real MindSpore model trained by either entry point
with monitoring on, under a fault chosen by the parent.

    python fault_child.py ENTRY SCENARIO RUN_DIR STEPS

ENTRY: ``model`` (``Model.train`` with ``TrainMonitor``) or ``loop`` (a hand-written ``value_and_grad`` loop with
``LoopMonitor``). SCENARIO: ``plain``; ``sigint_ignored`` (SIGINT ignored from the start, as for a job started in
the background by a shell, then sent once training began: before MindSpore's runtime puts its own SIGINT handler
in place during the first steps, which ends the process on a later one); ``second_writer`` (waits until another process
has started writing the same run folder's rank file). The file system faults (full, read-only) come from where
RUN_DIR is (a small tmpfs the parent mounted).

Prints ``RECORDED <step>`` after each step, ``AFTER TRAIN errors=<n>`` when training returned. Every thread's
stack is written to stderr on SIGUSR1 (``faulthandler``): the parent sends it when the steps stop coming.
"""

import faulthandler
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    entry, scenario, run_dir, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if scenario == "sigint_ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.path.insert(0, HERE)
    import mindspore as ms
    from mindspore import nn

    from cb_helpers import classification_data, dense_net

    ms.set_context(mode=ms.GRAPH_MODE)
    from tb_mindspore_callbacks import Debug, Diagnostic, Storage

    # Every writer on: event file, rank statistics, the experiments registry next to the run folder.
    kwargs = dict(collect_freq=1, storage=Storage(flush_secs=0.2, registry="auto"), debug=Debug(items="all", every=5),
                  diagnostic=Diagnostic(every=5))

    def on_begin():
        if scenario == "sigint_ignored":
            os.kill(os.getpid(), signal.SIGINT)

    def on_step(step):
        print("RECORDED %d" % step, flush=True)
        if scenario == "second_writer" and step == 2:
            time.sleep(1.0)

    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    data = classification_data(steps)
    if entry == "model":
        from mindspore.train import Callback, Model

        from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

        class Steps(Callback):
            def on_train_begin(self, run_context):
                on_begin()

            def on_train_step_end(self, run_context):
                on_step(run_context.original_args().cur_step_num)

        model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
        monitor = TrainMonitor(run_dir, **kwargs)
        model.train(1, data, callbacks=[monitor, Steps()], dataset_sink_mode=False)
        errors = monitor.errors
    else:
        from tb_mindspore_callbacks import LoopMonitor

        def forward(x, y):
            return loss_fn(net(x), y)

        grad_fn = ms.value_and_grad(forward, None, opt.parameters)
        step = 0
        with LoopMonitor(run_dir, opt, network=net, batch_size=8, **kwargs) as mon:
            on_begin()
            for x, y in data.create_tuple_iterator():
                mon.begin_step()
                loss, grads = grad_fn(x, y)
                mon.update(grads)
                mon.step(loss, grads, inputs=(x,))
                step += 1
                on_step(step)
        errors = mon.monitor.errors
    print("AFTER TRAIN errors=%d" % errors, flush=True)


if __name__ == "__main__":
    main()
