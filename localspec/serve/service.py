"""One loaded pair and engine behind a fair bounded queue: plan requests, run them in the worker, count them."""

from __future__ import annotations

import logging
from dataclasses import replace

from localspec.prompting.formats import ToolCallFormat
from localspec.prompting.prompt import tool_format
from localspec.runtime.compute_thread import ComputeThread
from localspec.serve.api_errors import internal, overloaded, shutting_down
from localspec.serve.generate import DoneEvent, Emit, ErrorEvent, run_plan
from localspec.serve.metrics import Metrics
from localspec.serve.plan import Plan, make_plan
from localspec.serve.queue import Job, QueueFull, WorkQueue
from localspec.serve.responses import now
from localspec.serve.schemas import ChatRequest
from localspec.serve.tenants import EngineFactory, Tenant, Tenants
from localspec.speculative import GenParams
from localspec.turns import TurnEngine

log = logging.getLogger("localspec.serve")


class ChatService:
    def __init__(self, pair, engine, *, model_id: str, defaults: GenParams = GenParams(),
                 fmt: ToolCallFormat | None = None, max_waiting: int = 16, aliases: tuple[str, ...] = (),
                 compute: ComputeThread | None = None, more_engines: EngineFactory | None = None,
                 isolated: bool = False):
        """`engine`: the first tenant's; `more_engines` builds one for each further tenant (serve/tenants.py), and
        `isolated` (several API keys) makes every key a tenant of its own."""
        self.pair = pair
        self.engine = engine
        self.model = pair.target
        self.n_ctx = pair.target_ctx.n_ctx
        self.model_id = model_id
        self.aliases = {model_id, *aliases}
        self.defaults = defaults
        self.fmt = fmt or tool_format(self.model)
        self.tenants = Tenants(engine, more_engines, isolated=isolated)
        self._turns: dict[int, TurnEngine] = {}
        self.turns = self._turns_for(engine)
        self.metrics = Metrics()
        self.queue = WorkQueue(max_waiting)
        # The thread that loaded the pair generates too (runtime/compute_thread.py says why); None: the queue's.
        self.compute = compute
        self.created = now()

    def plan(self, req: ChatRequest) -> Plan:
        # One model is loaded: any name means it (clients hard-code names, as llama-server allows); responses say
        # which model answered in their `model` field.
        plan = make_plan(self.model, self.n_ctx, req, self.defaults, self.fmt)
        self._keep_prefix(req)
        return plan

    def _keep_prefix(self, req: ChatRequest) -> None:
        """The request's system prompt and tools, computed once and kept (runtime/prefixes.py): the next request
        with the same tools starts from them even after requests with other tools came in between, and so does
        the server after a restart."""
        from localspec.prompting import thinking as think
        from localspec.prompting.prompt import stable_prefix

        if not req.tools:
            return  # a prompt without tools is short: the cache's own reuse is enough
        template = self.model.chat_template
        system = []
        for m in think.no_think(req.messages, template, req.thinking):  # as the plan's prompt has them
            if m.get("role") != "system":
                break
            system.append(m)
        try:
            prefix = stable_prefix(self.model, system, list(req.tools),
                                   template_vars=think.template_vars(template, req.thinking))
        except Exception:  # the plan rendered the whole conversation; a probe that fails is only a missed save
            log.debug("no stable prefix for this request", exc_info=True)
            return
        self.engine.keep_prefix(prefix)

    def _turns_for(self, engine) -> TurnEngine:
        turns = self._turns.get(id(engine))
        if turns is None:
            turns = self._turns[id(engine)] = TurnEngine(engine, self.model, self.fmt)
        return turns

    def start(self, plan: Plan, emit: Emit, client: str = "", tenant: str = "") -> Job:
        """Queue the generation for `tenant` (its API key's name; '' without keys); events reach `emit` from the
        worker thread. Raises APIError 503 when full."""
        who = self.tenants.get(tenant)
        turns = self._turns_for(who.engine)
        counted = self._counted(emit, who, plan)

        def job_fn(job: Job) -> None:
            try:
                if self.compute is not None:
                    self.compute.call(run_plan, turns, plan, job.cancel, counted)
                else:
                    run_plan(turns, plan, job.cancel, counted)
            except Exception as exc:  # the engine failed: answer 500, keep serving
                log.exception("generation failed")
                emit(ErrorEvent(internal(f"generation failed: {exc}")))

        def dropped() -> None:  # the server is shutting down before this request's turn
            emit(ErrorEvent(shutting_down()))

        try:
            return self.queue.submit(job_fn, client, on_drop=dropped)
        except QueueFull as full:
            raise overloaded(full.retry_after) from None

    def _counted(self, emit: Emit, tenant: Tenant, plan: Plan) -> Emit:
        """Count a finished generation (all tenants together, /metrics) and report it as its tenant sees it."""
        def wrapped(ev):
            if isinstance(ev, DoneEvent):
                self.metrics.observe(ev.stats, ev.finish_reason)
                log.info("generation done: finish=%s, %d prompt + %d completion tokens, %s", ev.finish_reason,
                         ev.prompt_tokens, ev.completion_tokens, ev.stats.summary())
                ev = replace(ev, stats=self.tenants.view(tenant, plan.prompt, ev.stats))
            emit(ev)
        return wrapped

    def metrics_text(self) -> str:
        return self.metrics.render(self.queue.running, self.queue.waiting)

    def close(self) -> None:
        if self.queue.close():  # if a generation is still running, leave the models to process exit
            self.pair.close()
            if self.compute is not None:
                self.compute.close()
