-- The chat drawn from a saved conversation (after a restart or reload): the blocks the harness told the model
-- (`<background-results>`, `<diagnostics>`) are drawn as what they are, a background task's end and diagnostics
-- lines, never as the user's words under `## You`.
local H = require('helpers')
local api = vim.api

local BLOCK = '<background-results>\nbg-1: exited 3\nnpm ERR! one\nnpm ERR! two\nbuild failed: missing script dev\n'
  .. 'npm ERR! last\nbg-2: killed by the user (SIGTERM)\n</background-results>'
local DIAGNOSTICS = "<diagnostics>\nsrc/a.ts:3:7: error: Type 'string' is not assignable to type 'number'. (ts)\n</diagnostics>"

--- A chat buffer as chat.lua makes it (no plan yet): the prompt header and an empty prompt.
local function chat_of(entries)
  local chat = require('stepwise.chat')
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, { '', chat.prompt_header, '' })
  local ch = { buf = buf, uri = 'file:///saved', plan_n = 0, tools = {}, queue = {} }
  chat._restore(ch, entries)
  return api.nvim_buf_get_lines(buf, 0, -1, false)
end

return H.spec({
  {
    name = 'chat restore: background results are the tasks\' ends, diagnostics their lines; only the prompt is the user\'s',
    fn = function()
      local lines = chat_of({
        { kind = 'user', runId = 'r', text = 'start the build' },
        { kind = 'assistant', runId = 'r', text = 'Started.' },
        { kind = 'background', runId = 'r', text = BLOCK },
        { kind = 'diagnostics', runId = 'r', text = DIAGNOSTICS },
      })
      local text = table.concat(lines, '\n')
      local you = vim.tbl_filter(function(l)
        return l == require('stepwise.chat').prompt_header
      end, lines)
      -- the restored prompt's header and the prompt's own, nothing more
      H.eq(2, #you, 'two "## You" headers: the prompt of the run and the input\n' .. text)
      H.eq(true, vim.tbl_contains(lines, 'start the build'), 'the prompt is there')
      H.eq(true, vim.tbl_contains(lines, '> ⏹ bg-1 exited 3'), 'the failed task\'s end\n' .. text)
      H.eq(true, vim.tbl_contains(lines, '>   npm ERR! last'), 'with the last lines of its output\n' .. text)
      H.eq(false, vim.tbl_contains(lines, '>   npm ERR! one'), 'only the last three')
      H.eq(true, vim.tbl_contains(lines, '> ⏹ bg-2 killed by the user (SIGTERM)'), 'the killed task\'s end\n' .. text)
      H.contains(text, "⚠ src/a.ts:3:7: error: Type 'string'", 'the diagnostics line')
      H.eq(nil, text:find('<background-results>', 1, true), 'no tags shown')
      H.eq(nil, text:find('<diagnostics>', 1, true), 'no tags shown')
    end,
  },
  {
    name = 'chat restore: a background block of a task that exited 0 is its end line alone',
    fn = function()
      local lines = chat_of({ { kind = 'background', runId = 'r', text = '<background-results>\nbg-3: exited 0\nall good\n</background-results>' } })
      H.eq(true, vim.tbl_contains(lines, '> ⏹ bg-3 exited 0'), table.concat(lines, '\n'))
      H.eq(false, vim.tbl_contains(lines, '>   all good'), 'no output for a task that succeeded')
    end,
  },
})
