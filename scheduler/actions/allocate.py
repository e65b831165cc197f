"""The allocate action: place ready pending gangs, disrupting nothing (docs/semantics.md §5.2).

Why: allocate is the first and most frequent action. For each job popped in
fairness order it checks the queue path's capacity, places the job's tasks to
allocate inside a Statement (within a topology domain when the PodGroup asks
for one), and keeps them only if all fit (gang);
a gang that would start on capacity still being released is pipelined whole
(the Statement's commit converts it). A gang shaped like one that failed
since the last commit takes that failure's reason without a second search
(:mod:`scheduler.framework.shapes`). After a placement, once a run of jobs has
been refused, allocate looks whether every job left would be refused by its
shape (each shape tried once, rolled back); if so it refuses them all without
popping them: with nothing left to place, their order decides nothing.
"""

from __future__ import annotations

from scheduler.actions.ordering import JobQueue, remember_order
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.framework import gang
from scheduler.framework.session import Session
from scheduler.framework.shapes import Failure, Shape, allocation_shape, shapes_apply
from scheduler.framework.topology_placement import place_tasks

_SHAPE = "allocate.shape"


def _shape(session: Session, job: PodGroupInfo) -> Shape | None:
    """The allocation shape of the job's first task choice: read only from the job and
    its pods (statuses included), so carried from cycle to cycle like that choice."""
    return session.carried_memo(_SHAPE, job, _first_shape, session, job)


def _first_shape(session: Session, job: PodGroupInfo) -> Shape | None:
    """:func:`allocation_shape` of the job's first task choice, formed afresh."""
    return allocation_shape(job, gang.tasks_to_allocate(session, job))


class AllocateAction:
    """Gang-allocate pending jobs in queue order; bind on idle, pipeline on releasing."""

    name = "allocate"

    def execute(self, session: Session) -> None:
        depth = session.config.queue_depth_per_action.get(self.name)
        settled = session.settled_version()
        queue = JobQueue.pending(session, depth)
        popped: list[PodGroupInfo] = []
        use_shapes = session.memoise and shapes_apply(session)
        # shape -> why it failed, since the last commit
        failed: dict[Shape, Failure] = {}
        committed = False  # something was placed in this execution
        quiet = 0  # jobs refused since the last commit
        looks_left = _LOOKS_AHEAD
        while True:
            if committed and quiet >= _QUIET and looks_left and use_shapes:
                looks_left -= 1
                quiet = 0
                rest = self._rest_refused(session, queue, failed)
                if rest is not None:
                    self._refuse_rest(session, rest, failed)
                    return
            job = queue.pop()
            if job is None:
                remember_order(session, depth, settled, popped)
                return
            popped.append(job)
            session.considered.add(job.key)
            shape = None
            if use_shapes and failed:  # no failure since the last commit: no shape to match
                shape = _shape(session, job)
                if shape is not None and shape in failed:
                    tasks = gang.tasks_to_allocate(session, job)
                    session.add_reason(job, failed[shape].said_for(tasks))
                    quiet += 1
                    continue
            problem = self.allocate_job(session, job)
            if problem is None:
                failed.clear()  # the session changed: earlier failures prove nothing now
                committed, quiet = True, 0
                if job.has_pending():
                    queue.push(job)  # elastic extras: one more pod per pop, fairness re-evaluated
                continue
            quiet += 1
            if use_shapes and problem:
                # the tasks as they were: a failed placement left every status as it found it
                shape = _shape(session, job) if shape is None else shape
                if shape is not None:
                    failed[shape] = Failure(problem, gang.tasks_to_allocate(session, job))

    def _rest_refused(
        self, session: Session, queue: JobQueue, failed: dict[Shape, Failure]
    ) -> list[tuple[PodGroupInfo, Shape]] | None:
        """Every job left in ``queue`` with its shape, if each would be refused; else None.

        A shape not yet in ``failed`` is tried for one of its jobs, out of pop order and
        without committing or saying anything; its failure goes into ``failed``, where
        the ordered path would have put it on meeting the shape's first job: the
        session is the same until something is placed, and a same-shaped gang fails
        with the same reason (:mod:`scheduler.framework.shapes`). None as soon as a
        job without a shape is left, or one that would place, or one with nothing to
        try: the ordered path goes on.
        """
        rest: list[tuple[PodGroupInfo, Shape]] = []
        for job in queue.remaining():
            shape = _shape(session, job)
            if shape is None:
                return None
            if shape not in failed:
                problem = self._first_problem(session, job, commit=False)
                if not problem:
                    return None
                failed[shape] = Failure(problem, gang.tasks_to_allocate(session, job))
            rest.append((job, shape))
        return rest

    @staticmethod
    def _refuse_rest(
        session: Session,
        rest: list[tuple[PodGroupInfo, Shape]],
        failed: dict[Shape, Failure],
    ) -> None:
        """Refuse the jobs :meth:`_rest_refused` gave with their shapes' failures: nothing
        can be placed any more, so the order they are refused in decides nothing and they
        are not popped."""
        for job, shape in rest:
            session.considered.add(job.key)
            tasks = gang.tasks_to_allocate(session, job)
            session.add_reason(job, failed[shape].said_for(tasks))

    def allocate_job(self, session: Session, job: PodGroupInfo) -> str | None:
        """Place the job's first task choice that fits: None, or the first choice's problem.

        A job has more than one choice only when ``minSubGroup`` leaves some
        subgroups optional (:func:`gang.task_choices`). A job with no choice
        returns the empty problem (nothing is said).
        """
        problem = self._first_problem(session, job, commit=True)
        if problem:
            session.add_reason(job, problem)
        return problem

    @classmethod
    def _first_problem(cls, session: Session, job: PodGroupInfo, *, commit: bool) -> str | None:
        """None when a task choice fits (placed if ``commit``, else rolled back), else the
        first choice's problem ("" for a job with no choice)."""
        first_problem: str | None = None
        for tasks in gang.choices_to_try(session, job):
            problem = cls._place(session, job, tasks, commit=commit)
            if problem is None:
                return None
            first_problem = first_problem or problem
        return first_problem or ""

    @staticmethod
    def _place(
        session: Session, job: PodGroupInfo, tasks: list[PodInfo], *, commit: bool
    ) -> str | None:
        problem = session.job_capacity_problem(job, tasks)
        if problem:
            return problem
        statement = session.statement()
        problem = place_tasks(session, statement, job, tasks)
        if problem is not None or not commit:
            statement.discard()
            return problem
        statement.commit()  # pipelines the whole gang if part of it must wait
        return None


# Jobs refused in a row after a commit before allocate looks whether all the rest would be
# refused too, and how often it looks in one execution (each look reads every job left).
_QUIET = 16
_LOOKS_AHEAD = 2
