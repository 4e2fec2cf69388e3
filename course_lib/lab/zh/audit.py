"""The audit's words in Chinese (notebook 05 §5, exercises 04.save, 05.resume, 05.audit), keyed by its
English templates: :mod:`resume_audit` writes English and keeps a finding's facts as data, and
:mod:`course_lib.lab.audit_view` words the same templates from here. A new kind, verdict or fault of the
audit gets its Chinese here (``tests/test_audit_view.py`` finds a missing one), with the same placeholders."""

ZH = {
    # what each finding says, and its fix (resume_audit.findings.KINDS, in its order)
    "parameters differ before the first step between two runs never interrupted: the model's initialisation is not seeded":
        "两次从未中断的训练在第一步之前参数就不同：模型初始化没有设种子",
    "call torch.manual_seed(seed) before building the model": "在构建模型之前调用 torch.manual_seed(seed)",
    "the batches of step {step} differ between two runs never interrupted: the data set or its order is not seeded":
        "两次从未中断的训练，第 {step} 步的批次不同：数据集或数据顺序没有设种子",
    "seed what builds and shuffles the data (torch.manual_seed, random.seed, np.random.seed, or a seeded DataLoader "
    "generator)":
        "给构建和打乱数据的代码设种子（torch.manual_seed、random.seed、np.random.seed，或带种子的 DataLoader 生成器）",
    "the state of {rngs} differs at step {step} between two runs never interrupted, with the same parameters and batches":
        "两次从未中断的训练参数和批次都相同，第 {step} 步时{rngs}的状态却不同",
    "seed every RNG a step draws from when the run starts": "训练开始时给每一步用到的随机数生成器都设好种子",
    "the batches of step {step} differ between two runs never interrupted, and they come from {workers} DataLoader "
    "workers: the workers' randomness is not seeded":
        "两次从未中断的训练，第 {step} 步的批次不同，而这些批次来自 {workers} 个 DataLoader 工作进程："
        "工作进程里的随机性没有设种子",
    "seed what a worker draws from in worker_init_fn from torch.initial_seed() (torch seeds each worker's random and NumPy "
    "global RNG, not a generator of your own), and give the DataLoader a seeded generator":
        "在 worker_init_fn 里用 torch.initial_seed() 给工作进程用到的随机数生成器设种子（torch 只替每个工作进程设好 random "
        "和 NumPy 的全局生成器，不管你自己建的生成器），并给 DataLoader 一个带种子的生成器",
    "{what} of step {step} differ between two runs never interrupted, with the same parameters, batches and RNGs: the "
    "computation is not deterministic":
        "两次从未中断的训练参数、批次和随机数生成器都相同，第 {step} 步的 {what} 却不同：计算本身不是确定性的",
    "torch.use_deterministic_algorithms(True), a fixed number of threads, seeded data workers":
        "torch.use_deterministic_algorithms(True)、固定线程数、给 DataLoader 的工作进程设好种子",
    "{what} of step {step} differ between two runs never interrupted, with the same parameters, batches and RNGs, on CUDA: "
    "its kernels are not deterministic by default":
        "两次从未中断的训练参数、批次和随机数生成器都相同，第 {step} 步的 {what} 却不同：CUDA 的算子默认不是确定性的",
    "set CUBLAS_WORKSPACE_CONFIG=:4096:8 before CUDA starts, torch.use_deterministic_algorithms(True) and "
    "torch.backends.cudnn.benchmark = False; seed the data workers":
        "在 CUDA 启动之前设置 CUBLAS_WORKSPACE_CONFIG=:4096:8，调用 torch.use_deterministic_algorithms(True)，并设 "
        "torch.backends.cudnn.benchmark = False；给 DataLoader 的工作进程设好种子",
    "{what}": "{what}",
    "make two runs of the same command the same run before auditing resumes":
        "先让同一条命令的两次训练成为同一次训练，再审计续训",
    "the DistributedSampler draws the same order in every epoch (epoch {epoch} in all {passes} passes on rank {rank}): "
    "set_epoch is never called":
        "DistributedSampler 每个 epoch 的顺序都一样（Rank {rank} 的 {passes} 次遍历都是 epoch {epoch}）：从没调用 set_epoch",
    "call sampler.set_epoch(epoch) at the start of each epoch": "在每个 epoch 开始时调用 sampler.set_epoch(epoch)",
    "the DistributedSampler's seed differs between ranks ({seeds}): each rank shuffles another permutation, so their "
    "shares overlap and some samples are never trained in an epoch":
        "各个 Rank 的 DistributedSampler 种子不同（{seeds}）：每个 Rank 打乱出另一种排列，各自分到的数据互相重叠，一个 "
        "epoch 里有的样本根本没训练到",
    "give every rank's DistributedSampler the same seed (the run's), not one derived from the rank":
        "所有 Rank 的 DistributedSampler 用同一个种子（本次训练的种子），不要从 Rank 号推出种子",
    "after {fault}, the resumed run did not start ({error}): the checkpoint a crash cut half-way was the one it read":
        "{fault}后，续训没能启动（{error}）：它读的正是那个保存到一半被故障截断的检查点",
    "write the checkpoint to a temporary file, fsync it, then os.replace it over the old one (the previous checkpoint "
    "stays valid until the new one is complete)":
        "先把检查点写进临时文件并 fsync，再用 os.replace 覆盖旧检查点（新的写完之前，旧检查点一直有效）",
    "after {fault}, the resumed run could not read {target} ({error}): the checkpoint a crash cut half-way was the one it "
    "needed":
        "{fault}后，续训读不了 {target}（{error}）：它需要的正是那个保存到一半被截断的检查点",
    "after {fault}, the resumed run went on from step {resumed}, not from the checkpoint of step {newest}: the crash "
    "struck while the save replaced it, and left neither ({lost} steps lost)":
        "{fault}后，续训从第 {resumed} 步接着训练，而不是从第 {newest} 步的检查点：故障正好发生在新的保存替换它的时候，"
        "新旧两个检查点都没留下（白费了 {lost} 步）",
    "after {fault}, the resumed run did not start: {error}": "{fault}后，续训没能启动：{error}",
    "make the resume read only complete checkpoints, and fix the error above": "让续训只读取完整的检查点，并修正上面的错误",
    "{fault}: the run did not end within {seconds:.0f} s and was killed (a rank waiting for a dead peer?)":
        "{fault}：训练在 {seconds:.0f} 秒内没有结束，被杀掉（某个 Rank 在等一个已经死掉的同伴？）",
    "let every rank fail when a peer is lost (a collective's timeout), so the launcher can restart the job":
        "同伴丢失时让每个 Rank 都报错退出（靠集合通信的超时），启动器才能重启整个作业",
    "after {fault}, the resumed run started again from step 0 although the checkpoint of step {newest} was complete: no "
    "checkpoint was loaded ({lost} steps lost)":
        "{fault}后，续训从第 0 步重新开始，而第 {newest} 步的检查点是完整的：根本没有加载检查点（白费了 {lost} 步）",
    "load the newest checkpoint when the run starts": "训练启动时加载最新的检查点",
    "after {fault}, the resumed run went on from step {resumed}, although the checkpoint of step {newest} was on disk, "
    "intact: the resume did not take the newest checkpoint ({lost} steps lost)":
        "{fault}后，续训从第 {resumed} 步接着训练，可第 {newest} 步的检查点完好地留在磁盘上："
        "续训没有用最新的检查点（白费了 {lost} 步）",
    "resume from the newest complete checkpoint, whichever file holds it (by step number, not by file name: 'step-9' sorts "
    "after 'step-18'; a save made on SIGTERM included)":
        "从最新的完整检查点续训，不管它在哪个文件里（按步数排序，不要按文件名：按字符串比，'step-9' 排在 'step-18' 后面；"
        "收到 SIGTERM 时存下的检查点也算）",
    "after {fault}, the parameters the resumed run started from are no state of the uninterrupted run":
        "{fault}后，续训起点的参数不是从未中断的训练中的任何一个状态",
    "load the model's state_dict from this run's checkpoint": "从本次训练的检查点加载模型的 state_dict",
    "{fault} (a scheduler's preemption): the script stopped without saving; the resume went on from step {resumed} ({lost} "
    "steps lost)":
        "{fault}（集群调度系统的抢占）：脚本没有保存就停下了；续训从第 {resumed} 步接着训练（白费了 {lost} 步）",
    "on SIGTERM set a flag; at the end of the step save a checkpoint and exit":
        "收到 SIGTERM 时只设一个标志；在这一步结束时保存检查点，然后退出",
    "{fault}: the script was still running {grace:.0f} s later and was killed; the resume went on from step {resumed} "
    "({lost} steps lost)":
        "{fault}：{grace:.0f} 秒后脚本还在运行，被杀掉；续训从第 {resumed} 步接着训练（白费了 {lost} 步）",
    "after {fault}, the checkpoint the resume read was written by a background save ({thread}) from the live model and "
    "optimizer while training went on: it holds the state of later steps beside the step it was asked for, so the resumed "
    "run parted at step {step}":
        "{fault}后，续训读的检查点是由一个异步保存（线程 {thread}）在训练继续进行时，直接拿正在变化的模型和优化器写的："
        "它在被要求保存的那一步旁边，装着后面几步的状态，所以续训在第 {step} 步出现分歧",
    "hand a background save a snapshot (every tensor of the model's and the optimizer's state_dict() cloned, e.g. "
    "copy.deepcopy), or save on the training thread":
        "交给异步保存的必须是快照（把模型和优化器 state_dict() 里的每个张量都复制一份，比如用 copy.deepcopy），"
        "或者在训练线程里保存",
    "after {fault}, the resumed run started from the parameters of step {params} beside the optimizer state of step "
    "{state}: the checkpoint is no snapshot of one step":
        "{fault}后，续训开始时的参数是第 {params} 步的，优化器状态却是第 {state} 步的：这个检查点不是同一步的快照",
    "after {fault}, the optimizer state at the resume (step {resumed}) differs from the uninterrupted run's":
        "{fault}后，续训时（第 {resumed} 步）的优化器状态与从未中断的训练不同",
    "save optimizer.state_dict() with the model and load it back (the chapter's second item)":
        "把 optimizer.state_dict() 和模型一起保存并加载回来（本章三样中的第二样）",
    "after {fault}, step {step} used learning rate {ours} where the uninterrupted run used {theirs}":
        "{fault}后，第 {step} 步用的学习率是 {ours}，从未中断的训练用的是 {theirs}",
    "save the LR scheduler's state_dict() with the checkpoint and load it back":
        "把学习率调度器的 state_dict() 存进检查点并加载回来",
    "after {fault}, step {step} used learning rate {ours}, the uninterrupted run's rate from step {then} on: the schedule "
    "was put ahead of where it was (a scheduler stepped per epoch, fast-forwarded by steps)":
        "{fault}后，第 {step} 步用的学习率是 {ours}，这是从未中断的训练从第 {then} 步起用的学习率："
        "学习率调度器被放到了它原来位置的后面（按 epoch 走的学习率调度器按步数快进了）",
    "save and load the scheduler's state_dict(); if you fast-forward it, step it as many times as it was stepped (epochs "
    "for a per-epoch schedule)":
        "保存并加载学习率调度器的 state_dict()；如果要快进，它原来走了几次就走几次（按 epoch 走的学习率调度器按 epoch 数）",
    "after {fault}, step {step} used the GradScaler's scale {ours} where the uninterrupted run used {theirs}: its state "
    "was not saved (the scale decides which steps overflow and are skipped)":
        "{fault}后，第 {step} 步用的 GradScaler 缩放系数是 {ours}，从未中断的训练用的是 "
        "{theirs}：它的状态没有保存（缩放系数决定哪些步溢出、被跳过）",
    "save scaler.state_dict() with the checkpoint and load it back": "把 scaler.state_dict() 存进检查点并加载回来",
    "after {fault}, the optimizer's settings (other than the learning rate) differ at step {step}":
        "{fault}后，第 {step} 步时优化器的设置（学习率以外的）不同",
    "restore the optimizer with load_state_dict, param groups included": "用 load_state_dict 恢复优化器，包括它的参数组",
    "after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): it was never restored":
        "{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：它从来没有被恢复过",
    "save torch.get_rng_state() (and random.getstate(), np.random.get_state(), CUDA's) of every rank with the checkpoint "
    "and restore them before the next step":
        "把每个 Rank 的 torch.get_rng_state()（以及 random.getstate()、np.random.get_state()、CUDA 的状态）存进检查点，"
        "在下一步之前恢复",
    "after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): it was seeded again "
    "after the checkpoint was loaded, instead of restored":
        "{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：加载检查点之后又重新设了种子，而不是恢复保存的状态",
    "restore the saved RNG state (torch.set_rng_state) instead of seeding again":
        "恢复保存的随机数生成器状态（torch.set_rng_state），不要重新设种子",
    "after {fault}, the state of {rngs} differs at the first step after the resume (rank {ranks}): it was restored, then "
    "drew again before the step (a DataLoader iterator draws one number from torch's RNG when it is created)":
        "{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：恢复之后、这一步之前又抽取了随机数（每次 "
        "`iter(loader)` 都会从 torch 的随机数生成器抽一个数）",
    "restore the RNG last, right before the next step, or give the DataLoader a generator of its own":
        "最后再恢复随机数生成器，紧挨着下一步；或者给 DataLoader 一个它自己的生成器",
    "after {fault}, the state of torch's CPU RNG differs at the first step after the resume (rank {ranks}), and so does "
    "the batch: the RNG was never restored, and the DataLoader, which has no generator of its own, draws its shuffle from "
    "it":
        "{fault}后，续训的第一步时 torch 的 CPU 随机数生成器的状态不同（Rank "
        "{ranks}），批次也不同：这个生成器从来没有恢复，而没有自己生成器的 DataLoader 正是用它来打乱数据",
    "save torch.get_rng_state() with the checkpoint and restore it before the epoch's DataLoader iterator is created (or "
    "give the DataLoader a generator of its own and save its state)":
        "把 torch.get_rng_state() 存进检查点，在这个 epoch 开始遍历 DataLoader（iter(loader)）之前恢复（或者给 DataLoader "
        "一个它自己的生成器，并保存它的状态）",
    "after {fault}, the state of {rngs} differs on rank {bad} and matches on rank {good}: not every rank's RNG was saved "
    "and restored":
        "{fault}后，{rngs}的状态在 Rank {bad} 上不同、在 Rank {good} 上相同：并不是每个 Rank 的随机数生成器都保存并恢复了",
    "save and restore every rank's RNG state, each rank its own": "每个 Rank 各自保存、恢复自己的随机数生成器状态",
    "after {fault}, the resumed run went on from the checkpoint of step {resumed}, saved after {pending} backward pass(es) "
    "of step {step} had been accumulated: their gradients are lost, and step {step} accumulated other micro-batches than "
    "the uninterrupted run's":
        "{fault}后，续训从第 {resumed} 步的检查点接着训练，而这个检查点是在第 {step} 步已经累积了 {pending} "
        "次反向传播之后保存的：这些梯度丢了，第 {step} 步累积的微批次也和从未中断的训练不同",
    "save at an optimizer step's end (after optimizer.step() and zero_grad()), or save the accumulation counter with the "
    "checkpoint and the gradients accumulated so far":
        "在一个优化器步结束时保存（optimizer.step() 和 zero_grad() 之后），或者把梯度累积的计数和已经累积的梯度一起存进检查"
        "点",
    "after {fault}, the resumed run went back to the start of its epoch: step {step} trained the batch of step {other} "
    "again ({n} step(s) repeated)":
        "{fault}后，续训回到了所在 epoch 的开头：第 {step} 步又训练了第 {other} 步的批次（重复了 {n} 步）",
    "save the position within the epoch (the step) with the checkpoint and skip the batches already trained":
        "把 epoch 内的位置（步数）存进检查点，续训时跳过已经训练过的批次",
    "after {fault}, the resumed run trains the epoch it had finished again: step {step} trained the batch of step {other}, "
    "one epoch ({n} steps) back":
        "{fault}后，续训把已经训练完的那个 epoch 又训练了一遍：第 {step} 步训练的是第 {other} 步的批次，退回了一个 "
        "epoch（{n} 步）",
    "the saved epoch is the one just finished: resume from the next one (epoch + 1)":
        "保存的 epoch 是刚训练完的那个：应从下一个（epoch + 1）开始续训",
    "after {fault}, the resumed run skipped the batches of {n} step(s): step {step} trained the batch of step {other}":
        "{fault}后，续训跳过了 {n} 步的批次：第 {step} 步训练的是第 {other} 步的批次",
    "after {fault}, step {step} trained another batch than the uninterrupted run's: the DataLoader's generator was in "
    "another state as the pass began (it was not restored)":
        "{fault}后，第 {step} 步训练的批次与从未中断的训练不同：这一轮遍历开始时，DataLoader "
        "自己的生成器处在另一个状态（它没有恢复）",
    "save the DataLoader generator's state (generator.get_state()) with the checkpoint and restore it (set_state) before "
    "the pass resumes, or seed it from the epoch":
        "把 DataLoader 生成器的状态（generator.get_state()）存进检查点，在这一轮遍历接着进行之前用 set_state 恢复；或者用 "
        "epoch 给它设种子",
    "after {fault}, step {step} trained another batch than the uninterrupted run's, while every RNG the audit sees "
    "matched: the data order was not restored":
        "{fault}后，第 {step} 步训练的批次与从未中断的训练不同，而审计看得到的随机数生成器都相同：数据顺序没有恢复",
    "restore the shuffle: a DataLoader generator's state (generator.get_state()), or sampler.set_epoch(epoch) with the "
    "resumed epoch":
        "恢复数据的打乱顺序：DataLoader 生成器的状态（generator.get_state()），或用续训所在的 epoch 调用 "
        "sampler.set_epoch(epoch)",
    "after {fault}, step {step} trained another batch than the uninterrupted run's (its DistributedSampler was at epoch "
    "{ours}, the uninterrupted run's at epoch {theirs}): the data order was not restored":
        "{fault}后，第 {step} 步训练的批次与从未中断的训练不同（它的 DistributedSampler 在 epoch {ours}，从未中断的训练在 "
        "epoch {theirs}）：数据顺序没有恢复",
    "after {fault}, the model's buffers (BatchNorm's running statistics, any registered buffer) at step {step} differ from "
    "the uninterrupted run's while its parameters, optimizer state and batches match: they were not restored":
        "{fault}后，第 {step} 步时模型的缓冲区（BatchNorm 的滑动平均统计量，以及任何注册的缓冲区）与从未中断的训练不同，"
        "而参数、优化器状态和批次都相同：缓冲区没有恢复",
    "save model.state_dict() (it holds the buffers), not only the parameters, and load it with strict=True":
        "保存 model.state_dict()（它包含缓冲区），不要只存参数；加载时用 strict=True",
    "after {fault}, the gradients of step {step} differ while parameters, optimizer state, learning rate and RNGs match: "
    "the data order or the position in the epoch (the audit saw no DataLoader)":
        "{fault}后，参数、优化器状态、学习率和随机数生成器都相同，第 {step} 步的梯度却不同：问题在数据顺序或 epoch "
        "内的位置（审计没有看到 DataLoader）",
    "save the position within the epoch (the step) with the checkpoint and skip the batches already trained; restore the "
    "data order":
        "把 epoch 内的位置（步数）存进检查点，续训时跳过已经训练过的批次；并恢复数据顺序",
    "after {fault}, {what} of step {step} differ while parameters, buffers, optimizer state, learning rate, RNGs and "
    "batches match: state the audit cannot see (a generator of the script's own, a counter) or a nondeterministic kernel":
        "{fault}后，参数、缓冲区、优化器状态、学习率、随机数生成器和批次都相同，第 {step} 步的 {what} 却不同："
        "是审计看不到的状态（脚本自己持有的生成器、计数器），或者结果不确定的算子",
    "save every piece of state a step reads (a generator's get_state())":
        "把一步用到的所有状态都保存下来（生成器用 get_state()）",
    "after {fault}, the averaged model (EMA/SWA) at step {step} differs from the uninterrupted run's while the trained "
    "parameters match: it was not saved and restored":
        "{fault}后，第 {step} 步时的平均模型（EMA/SWA）与从未中断的训练不同，而训练的参数相同：它没有保存和恢复",
    "save the averaged model's state_dict() (n_averaged included) with the checkpoint and load it back":
        "把平均模型的 state_dict()（包括 n_averaged）存进检查点并加载回来",
    "after {fault}, the resumed run took {ours} steps in all, the uninterrupted one {theirs}":
        "{fault}后，续训后的训练一共走了 {ours} 步，从未中断的训练走了 {theirs} 步",
    "resume at the step after the one saved, and end where the uninterrupted run ends":
        "从保存的那一步的下一步续训，并在从未中断的训练结束的地方结束",
    "after {fault}, the final parameters differ from the uninterrupted run's": "{fault}后，最终参数与从未中断的训练不同",
    "see the lines above": "见上面几行",
    "after {fault}, the resumed run ended with exit code {code}: {error}":
        "{fault}后，续训后的训练以退出码 {code} 结束：{error}",
    "fix the error above": "修正上面的错误",
    "after {fault}, the resumed run trained every step and ended bit-identical, then a process died as its interpreter "
    "shut down (exit code {code}: {error}): not a resume defect, but the job reads as failed":
        "{fault}后，续训后的训练跑完了每一步，结果逐位相同，随后有一个进程在 Python 退出的过程中被中止（退出码 "
        "{code}：{error}）：续训本身没有问题，但作业会被当作失败",
    "leave each process through os._exit(0) once destroy_process_group() has returned: a thread of the process group still "
    "running at shutdown aborts the process (pytorch/pytorch#179291)":
        "destroy_process_group() 返回后，让每个进程用 os._exit(0) 退出：Python 退出时通信组的线程还在运行，"
        "进程就会被中止（pytorch/pytorch#179291）",
    "after {fault}, the checkpoint of step {newest} was lost: what was written since the last fsync of {files} is what a "
    "power cut takes back (the resume went on from step {resumed}, {lost} steps lost)":
        "{fault}后，第 {newest} 步的检查点丢了：{files} 没有 fsync，断电会让没有 fsync 的数据丢失（续训从第 {resumed} "
        "步接着训练，白费了 {lost} 步）",
    "fsync every file of a checkpoint (f.flush(); os.fsync(f.fileno())) before it is renamed into place, then fsync its "
    "folder":
        "检查点的每个文件在重命名到位之前都要 fsync（f.flush(); os.fsync(f.fileno())），然后再 fsync 所在文件夹",
    "after {fault}, the resumed run did not start ({error}): what was written since the last fsync of {files} is what a "
    "power cut takes back":
        "{fault}后，续训没能启动（{error}）：{files} 没有 fsync，断电后它们变成了空文件或者变短了",
    "after {fault}, the checkpoint of step {newest} was lost: no fsync of its folder followed {names}, so a power cut "
    "undoes it (the resume went on from step {resumed}, {lost} steps lost)":
        "{fault}后，第 {newest} 步的检查点丢了：{names} 之后所在文件夹没有 fsync，断电会把这些操作撤销（续训从第 {resumed} "
        "步接着训练，白费了 {lost} 步）",
    "fsync the folder after the rename that puts a checkpoint in place (fd = os.open(folder, os.O_RDONLY); os.fsync(fd); "
    "os.close(fd))":
        "把检查点重命名到位之后，fsync 所在文件夹（fd = os.open(文件夹, os.O_RDONLY); os.fsync(fd); os.close(fd)）",
    "after {fault}, the resumed run did not start ({error}): no fsync of its folder followed {names}, so a power cut undid "
    "it":
        "{fault}后，续训没能启动（{error}）：{names} 之后所在文件夹没有 fsync，断电把这些操作撤销了",
    "the audit did not see what wrote {files} under the run's folder (not Python code, torch.save, safetensors, pickle or "
    "NumPy: another program, or a library's native code), so it could not cut those writes nor tell what a power cut takes "
    "back of them":
        "审计没有看到是什么写了训练文件夹里的 {files}（不是 Python 代码，也不是 torch.save、safetensors、pickle 或 NumPy："
        "是别的程序，或者某个库的本地代码），所以没法在写这些文件时制造故障，也说不出断电会让它们丢掉什么",
    "write checkpoints from Python, or audit the writer itself; until then this verdict does not cover those files":
        "用 Python 写检查点，或者单独审计那个写文件的程序；在那之前，这个结论不包括这些文件",
    "{fault} was not delivered: the attempt took no step (exit code {code})":
        "故障“{fault}”没有发生：这次启动一步都没有训练（退出码 {code}）",
    "{fault} was not delivered: rank {rank} made no save after step {at} in that attempt":
        "故障“{fault}”没有发生：这次启动中 Rank {rank} 在第 {at} 步之后没有保存",
    "{fault} was not delivered: rank {rank} renamed or copied no file after its save of step {at}":
        "故障“{fault}”没有发生：这次启动中 Rank {rank} 在第 {at} 步的保存之后没有重命名或复制任何文件",
    "{fault} was not delivered: the attempt ended at step {reached} (exit code {code})":
        "故障“{fault}”没有发生：这次启动在第 {reached} 步就结束了（退出码 {code}）",
    "{fault} was not delivered: the run never interrupted made no such file event, or this run did not reach it":
        "故障“{fault}”没有发生：从未中断的训练没有这个文件事件，或者这次训练没有走到它",
    "the state of {rngs} differed after a resume, but nothing drew from it: the run stayed exact":
        "续训后{rngs}的状态不同，但没有任何代码从中抽取随机数：训练仍然逐位相同",
    # the verdicts (resume_audit.report.VERDICTS)
    "NOT DETERMINISTIC: two runs never interrupted differ, so no resume can be exact (fix that first)":
        "不确定：脚本本身不是确定性的，两次从未中断的训练就不同，任何续训都不可能逐位相同（先修正这一条）",
    "INCONCLUSIVE: the audit could not see or deliver everything (below); the {n} faults delivered resumed "
    "bit-identically, which says nothing of the rest":
        "无法下结论：审计没能看到或没能制造它需要的一切（见上）；已经发生的 {n} 次故障之后续训都逐位相同，"
        "但这说明不了其余的部分",
    "NOT DURABLE: every process kill resumed bit-identically, but a power cut loses a complete checkpoint (below){strict}":
        "经不起断电：每一次杀进程之后续训都逐位相同，但断电会让一个完整的检查点丢失（见上）{strict}",
    "EXACT, WITH LOST WORK: every one of {n} faults resumed bit-identically, but {lost} steps were trained again after {k} "
    "of them{strict}":
        "逐位相同，但有白费的训练：{n} 次故障之后的续训都逐位相同，但其中 {k} 次之后共有 {lost} 步重新训练了一遍{strict}",
    "EXACT: every one of {n} faults resumed bit-identically":
        "逐位相同：{n} 次故障，每一次之后的续训都与从未中断的训练逐位相同",
    "NOT EXACT: the run itself has a defect (above), although every fault resumed bit-identically":
        "不是逐位相同：尽管每次故障之后的续训都逐位相同，训练本身却有问题（见上）",
    "NOT EXACT: {bad} of {runs} interrupted runs fall short of the run never interrupted":
        "不是逐位相同：{runs} 次被中断的训练中，有 {bad} 次没能与从未中断的训练逐位相同",
    " (--strict: that fails)": "（--strict：这也算不通过）",
    # a fault, and whom it strikes (resume_audit.findings.FAULTS; a file event's role: rank1, role|main, role|proc)
    "SIGKILL {who} at step {at}": "第 {at} 步开始时{who}被 SIGKILL 杀掉",
    "SIGTERM {who} at step {at}": "第 {at} 步开始时{who}收到 SIGTERM",
    "SIGKILL {who} half-way through the save after step {at}": "第 {at} 步之后的保存写到一半时{who}被 SIGKILL 杀掉",
    "SIGKILL {who} as the save after step {at} was put in place (its rename or copy)":
        "第 {at} 步之后的保存放到位时（重命名之前或复制到一半）{who}被 SIGKILL 杀掉",
    "SIGKILL {who} at step {at}, just after the save of step {prev}":
        "第 {prev} 步刚保存完、第 {at} 步开始时{who}被 SIGKILL 杀掉",
    "SIGKILL just before {who}'s file event {n} ({op} {path}, step {at})":
        "{who}的第 {n} 个文件事件（{op} {path}，第 {at} 步）发生之前被 SIGKILL 杀掉",
    "SIGKILL with the file of {who}'s file event {n} ({op} {path}, step {at}) half written":
        "{who}的第 {n} 个文件事件（{op} {path}，第 {at} 步）写的文件只留下一半时被 SIGKILL 杀掉",
    "a power cut just before {who}'s file event {n} ({op} {path}, step {at}), the data not fsynced lost":
        "{who}的第 {n} 个文件事件（{op} {path}，第 {at} 步）之前断电，没有 fsync 的数据丢失",
    "a power cut just before {who}'s file event {n} ({op} {path}, step {at}), the renames and creates not fsynced undone":
        "{who}的第 {n} 个文件事件（{op} {path}，第 {at} 步）之前断电，所在文件夹没有 fsync 的创建和重命名被撤销",
    "every rank": "所有 Rank",
    "rank {rank}": "Rank {rank}",
    "role|main": "主进程",
    "role|proc": "其他进程",
    "{who}'s thread {thread}": "{who}的{thread}线程",
    # the RNGs, and what a power cut undid (RNG_NAMES, UNDONE, MORE)
    "Python's RNG (random)": "Python 的 random",
    "NumPy's global RNG": "NumPy 的全局随机数生成器",
    "torch's CPU RNG": "torch 的 CPU 随机数生成器",
    "CUDA's RNG": "CUDA 的随机数生成器",
    "the creation of {0}": "创建 {0}",
    "the rename of {0} to {1}": "把 {0} 重命名为 {1}",
    "the removal of {0}": "删除 {0}",
    "the creation of the folder {0}": "创建文件夹 {0}",
    "the removal of the folder {0}": "删除文件夹 {0}",
    " (and {n} more)": "（另有 {n} 处）",
}
