"""The core's lines in Chinese, keyed by the English template the core formats (``{name}`` for what a
line carries: a number, a path, a reason). The core writes English (it knows no language, and a log
file is read by tools); :func:`course_lib.lab.i18n.tr_line` matches a rendered line against these
templates and says it in Chinese, what it carries too when that has an entry. A line no template
matches stays as written, as the chapter's own ``Rank 0, Epoch [..], Step [..], Loss: ..`` does.
A new line of the core gets its template here (``tests/test_i18n.py`` finds a missing one)."""

ZH = {
    "Held-out accuracy {acc} on {n} reviews ({reduction}); parameters identical on all {w} ranks ({digest})":
        "留出集准确率 {acc}（{n} 条影评，归约方式 {reduction}）；{w} 个 Rank 上的参数逐位相同（{digest}）",
    "Resumed from {source}: epoch {epoch}, step {step}, mode {mode}, last loss {loss}":
        "从 {source} 续训：第 {epoch} 个 epoch，第 {step} 步，续训方式 {mode}，最后的损失 {loss}",
    "NOTE: a {saved}-rank checkpoint resumed on {w} rank(s) with the {reduction} reduction: the run continues "
    "bit-identically.":
        "注意：{saved} 个 Rank 保存的检查点在 {w} 个 Rank 上续训（归约方式 {reduction}）：训练继续，结果逐位相同。",
    "NOTE: the learning-rate schedule was planned for {before} steps and now runs to {after}: its linear decay is "
    "stretched to end at step {end}, so the next step uses lr {lr} (as planned: {planned}). Steps up to the "
    "checkpoint are unchanged. To extend bit-identically to a run planned that long, give both the same "
    "--schedule-steps.":
        "注意：学习率调度原计划 {before} 步，现在要走到第 {after} 步：线性衰减被拉长到第 {end} 步才结束，所以下一步的"
        "学习率是 {lr}（原计划 {planned}）。检查点之前的步不变。要与一开始就计划这么长的训练逐位相同，两次都给同样的 "
        "--schedule-steps。",
    "Stop requested ({why}): saved step {step}, exiting for a later --resume auto":
        "收到停止请求（{why}）：第 {step} 步已保存，退出，之后用 --resume auto 续训",
    "Rank {rank}: checkpoint at step {step} NOT saved ({err}); previous one kept":
        "Rank {rank}：第 {step} 步的检查点没有保存（{err}）；上一个检查点保留",
    "Rank {rank}: a peer is gone ({err}); emergency checkpoint {name} of the last finished step saved, exiting for "
    "--resume auto":
        "Rank {rank}：有一个 Rank 已经失联（{err}）；最后一个完成的步已存为紧急检查点 {name}，退出，"
        "之后用 --resume auto 续训",
    "The group re-formed in-process on {w} rank(s) ({reason}), {s} s after it noticed; step {step} next":
        "通信组在进程内重组为 {w} 个 Rank（{reason}），距发现问题 {s} 秒；下一步是第 {step} 步",
    "kill at step {step} (rank {rank}, {mode}) already fired in an earlier attempt; it does not fire again":
        "第 {step} 步的中断（Rank {rank}，{mode}）在之前的某次启动中已经触发过；不会再次触发",
    "WARNING: kill at step {step} will not fire: the run ends at step {total}":
        "警告：第 {step} 步的中断不会触发：训练在第 {total} 步就结束了",
    "WARNING: kill at step {step} will not fire: this attempt resumes after step {start}; pick a later step":
        "警告：第 {step} 步的中断不会触发：这次启动从第 {start} 步之后续训；请选更晚的一步",
    # a rank that ended early (ddp.launch.RunInterrupted; lab.tables.interruption)
    "rank {rank} {how} after step {step}; newest valid checkpoint: {checkpoint}. Continue with --resume auto.":
        "Rank {rank} 在第 {step} 步之后{how}；最新的有效检查点：{checkpoint}。用 --resume auto 续训。",
    "was killed by {signal}": "被 {signal} 杀掉",
    "stopped on SIGTERM (or SIGINT) after saving a checkpoint": "收到 SIGTERM（或 SIGINT），保存检查点后停下",
    "exited with code {code}": "退出，退出码 {code}",
    "training steps": "训练步数",
    "... (the epochs between: every line in {path}/rank*.log)": "……（中间各个 epoch 的每一行都在 {path}/rank*.log 里）",
    "runs through random failures": "带随机故障的训练",
    "cleaning": "清洗", "MinHash signatures": "MinHash 签名",  # the progress bars of station 1 (data.sources, data.near_dup)
    # a resume on another number of ranks, refused (checkpoint.resume.check_fits; notebook 05, deep-dive B)
    "checkpoint {source} was saved by {saved} rank(s), this run has {n}: DDP's gradient sum and each rank's RNG depend "
    "on the number of ranks, so the run could not continue exactly; resume on the same --world-size, or train both "
    "runs with a --reduction whose sum does not depend on it (train --help lists them)":
        "检查点 {source} 是 {saved} 个 Rank 保存的，这次训练只有 {n} 个：DDP 的梯度求和"
        "和每个 Rank 的随机数生成器状态都取决于进程总数，训练无法逐位相同地接着进行；"
        "请用同样的 --world-size 续训，或者两次训练都用求和结果不随进程总数变化的 --reduction（train --help 列出了它们）",
    "every {k} steps: stopped after {s} s at step {step} of {n}, {f} failures: not finished in its share of the "
    "drill's budget": "每 {k} 步保存一次：{s} 秒后停在第 {step} 步（共 {n} 步），故障 {f} 次：在分给它的时间预算内没有跑完",
    # notebook 03, "Is the gradient sync working?" (lab.drills.sync_claim, from ddp.consistency's check)
    "sha256 {digest} on every rank": "每个 Rank 上都是 sha256 {digest}",
    "rank {a} vs rank {b}: {n} tensor(s) differ": "Rank {a} 与 Rank {b}：{n} 个张量不同",
    # a checkpoint that does not verify (checkpoint.store: latest_valid, verify; python -m course_lib verify)
    "skipping checkpoint {name}: {reason}": "跳过检查点 {name}：{reason}",
    "{name} checksum mismatch (corrupted)": "{name} 的校验和不符（已损坏）",
    "{name} has {size} bytes, manifest says {expected} (truncated?)":
        "{name} 有 {size} 字节，清单上写的是 {expected}（被截断了？）",
    "{name} is missing": "缺少 {name}",
    "no manifest.json (never committed)": "没有 manifest.json（从未提交）",
    "files not in the manifest: {extra}": "清单里没有的文件：{extra}",
    "no checkpoints in {path}": "{path} 里没有检查点",
    "{name}: valid": "{name}：有效",
    "{name}: CORRUPT - {reason}": "{name}：已损坏 - {reason}",
    "{name}: uncommitted (a save that never finished; ignored)": "{name}：未提交（一次没有完成的保存；忽略）",
    "{valid} valid, {corrupt} corrupt": "{valid} 个有效，{corrupt} 个已损坏",
    # how often to save (beyond.advisor.format_advice; python -m course_lib advise)
    "How often to save {run_dir}, if failures come every {mtbf} on average":
        "{run_dir} 多久保存一次：假设平均每 {mtbf} 发生一次故障",
    "  the survivors' save covers {covered} of them": "  其中 {covered} 由幸存 Rank 的紧急保存覆盖",
    "  inputs:": "  输入：",
    "    step time            {seconds} s   {source}": "    每步用时             {seconds} 秒   {source}",
    "    save blocks the loop {seconds} s   {source}": "    保存时训练等待       {seconds} 秒   {source}",
    "    save writes          {seconds} s   {source}  ({where})":
        "    保存写盘             {seconds} 秒   {source}（{where}）",
    "    restart              {seconds} s   {source}": "    重启                 {seconds} 秒   {source}",
    "    steps in the run     {steps}": "    训练总步数           {steps}",
    "  save every {k} steps ({every} of training): expected loss {share} of wall time, {failures} failures "
    "expected in {wall}":
        "  每 {k} 步保存一次（相当于 {every} 的训练）：预计浪费总用时的 {share}，{wall} 内预计发生 {failures} 次故障",
    "    Young 1974 sqrt(2CM): every {young} steps;  Daly 2006: every {daly} steps;  minimum of the exact "
    "expectation: every {best} steps":
        "    Young 1974 sqrt(2CM)：每 {young} 步；Daly 2006：每 {daly} 步；使精确期望最小的间隔：每 {best} 步",
    "  this run was never interrupted: its restart cost is estimated from its first start (launch -> first "
    "step); --restart-seconds S overrides it":
        "  这次训练从未中断：重启的开销按它第一次启动估算（启动 -> 第一步）；可以用 --restart-seconds S 指定",
    "  the interval is as long as the run ({steps} steps): save at the end only, or plan a longer run with "
    "--steps": "  保存间隔和整次训练一样长（{steps} 步）：只在最后保存，或者用 --steps 规划一次更长的训练",
    "  this run saved every {k} steps: expected loss {share}": "  这次训练每 {k} 步保存一次：预计浪费 {share}",
    "in the background": "异步写盘",
    "inside the blocking time": "包含在等待时间内",
    "given": "指定值",
    "median of {n} step-to-step gaps without a save (metrics/rank0.jsonl)":
        "{n} 个不含保存的相邻步间隔的中位数（metrics/rank0.jsonl）",
    "median of {count} (TensorBoard {tag})": "{count}的中位数（TensorBoard {tag}）",
    "median of {count}: launch -> first step of work (add your scheduler's delay)":
        "{count}的中位数：启动 -> 第一个真正训练的步（还要加上集群调度系统的排队时间）",
    "{n} saves": "{n} 次保存", "{n} save": "{n} 次保存", "{n} restarts": "{n} 次重启", "{n} restart": "{n} 次重启",
    "estimated from the first start (launch -> first step of work): the run was never interrupted; add your "
    "scheduler's delay": "按第一次启动估算（启动 -> 第一个真正训练的步）：这次训练从未中断；还要加上集群调度系统的排队时间",
}
