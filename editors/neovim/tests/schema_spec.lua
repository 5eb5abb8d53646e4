-- What the server sends fits docs/protocol.schema.json: the validator itself, and a run whose every
-- notification and command result went through it (helpers install the check for every spec).
local H = require('helpers')

return H.spec({
  {
    name = 'the validator names what does not fit',
    fn = function()
      local S, doc = H.schema, H.schema.doc
      local plan = doc.notifications['stepwise/plan']
      local good = { workspace = 'file:///w', session = 'main', items = { { id = '1', text = 'a', status = 'pending' } }, completed = 0, total = 1, revision = 1, by = 'model' }
      H.eq({}, S.problems(doc, plan, good), 'a plan as the server sends it')
      local bad = vim.deepcopy(good)
      bad.items[1].status = 'done'
      bad.total = nil
      bad.revision = '1'
      local p = table.concat(S.problems(doc, plan, bad), '\n')
      H.contains(p, '$.items[0].status', 'the bad status is named')
      H.contains(p, '"total" is missing', 'the missing count is named')
      H.contains(p, '$.revision', 'the string revision is named')
      -- a command's result, and null where the schema allows it
      H.eq({}, S.problems(doc, doc.commands['stepwise.cancel'].result, vim.NIL), 'cancel answers null')
      H.truthy(#S.problems(doc, doc.commands['stepwise.run'].result, vim.NIL) > 0, 'run answers a runId')
      -- a field null on the wire arrives as nil: fine where null is allowed, not where it is not
      H.eq({}, S.problems(doc, doc.commands['stepwise.changes'].result, { workspace = 'w', session = 'main', files = {} }), 'runId null')
    end,
  },
  {
    name = 'a run: every notification and command result received fits the schema',
    timeout = 30000,
    fn = function()
      local before = H.schema.checked
      H.run_task('Look around', {
        H.turn({ calls = { H.todo({ { 'Look around', 'in_progress' } }) } }),
        H.turn({ calls = { { 'read_file', { path = 'a.txt' } } } }),
        H.turn({ text = 'Done looking.' }),
      })
      local done
      require('stepwise').execute(H.truthy(require('stepwise').current_folder(), 'a folder'), 'stepwise.checkpoints', nil, function(err, result)
        done = { err = err, result = result }
      end)
      H.wait(function()
        return done
      end, 5000, 'stepwise.checkpoints')
      H.eq(nil, done.err, 'stepwise.checkpoints answered')
      -- plan, status (running, idle), tool calls, text, usage, checkpoints: and the command's result
      H.truthy(H.schema.checked - before >= 8, 'messages checked: ' .. (H.schema.checked - before))
      H.eq({}, H.schema.violations, 'all fit')
    end,
  },
})
