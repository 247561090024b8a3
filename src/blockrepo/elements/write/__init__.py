"""The one element write core: validates, plans, writes, diffs and records 1..n elements of 1..n types.

Every element write goes through here: the element API calls it with one item, bulk writes with many
of one type, the importer with the records of every type of its file (`validation.validate_types`,
`persistence.persist_types`). Order of work, with a fixed number of statements per chunk of items rather
than per item:
1. `validation.validate`: `parse.BodyParser.parse` per item; references to elements that other items
   create (`{"name": …}`: earlier items of the type, or with `forward` any item of the write) are set
   aside, every other reference is resolved at once (`references.resolve_references`,
   `references.check_partners`); then the rules across items: hierarchy cycles, single-valued partners
   claimed twice, names (against the database and the other items), items depending on a failed item;
2. `persistence.persist`: creates as rows of tuples for every type before any value or relation (SQLite:
   with the ids handed out as AUTOINCREMENT would; PostgreSQL: INSERT … RETURNING), then values and
   relations as multi-row VALUES (COPY); updates: each item's `plan.plan_update` applied in batches, at
   the revisions the recorder hands out; deletions last. From PIPELINE_MIN_CREATES created elements on,
   SQLite runs these inserts on the write pipeline (`storage.write_pipeline`) while this thread goes on;
3. `record.ElementRecorder.write`: the one recorder of element writes gets every written element as its
   states before and after: created elements from their drafts (with what other created items list them
   in, when that is all that refers to them), the other written elements re-read a batch at a time,
   deleted ones from their last state; `changesets.Changesets` makes each changeset (created, or the
   diff of before and after) and one mirrored changeset for each element at the other end of changed
   relations and parents; the recorder gives each element one new revision per request.
The items (`items`), drafts (`drafts`) and the SQL of writes (`repository`) are shared by these steps.
"""
