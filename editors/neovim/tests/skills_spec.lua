-- Skills in the chat buffer: typing `/` at the start of the prompt offers the folder's skills with their
-- descriptions (`stepwise.skills`), the omnifunc offers them too, and `/name text` sent with :w brings the
-- skill to the model (the server loads it into the turn).
local H = require('helpers')
local api = vim.api

local function skill(dir, name, description, body)
  H.write(dir .. '/.agents/skills/' .. name .. '/SKILL.md', '---\nname: ' .. name .. '\ndescription: ' .. description .. '\n---\n' .. body .. '\n')
end

--- Types `keys` in Insert mode at the end of the buffer and reads the popup once it shows (Insert mode is
--- left after it, or after 5 s without one); the complete_info() seen, or nil.
local function popup_after(keys)
  local seen, tries = nil, 0
  local function probe()
    tries = tries + 1
    if vim.fn.pumvisible() == 1 then
      seen = vim.fn.complete_info({ 'items', 'selected' })
    end
    if seen or tries > 250 then
      api.nvim_feedkeys(api.nvim_replace_termcodes('<C-e><Esc>', true, false, true), 'n', false)
    else
      vim.defer_fn(probe, 20)
    end
  end
  vim.defer_fn(probe, 20)
  -- `!`: Insert mode stays until the probe leaves it; the server's answer comes meanwhile.
  api.nvim_feedkeys('A' .. keys, 'tx!', false)
  return seen
end

return H.spec({
  {
    name = 'skills: / at the start of the chat prompt offers the skills with their descriptions; /name sends the skill',
    timeout = 60000,
    fn = function()
      local dir = H.workspace({ ['a.txt'] = 'a\n' })
      skill(dir, 'release', 'How we release: tag, then publish', '# Release\nRun scripts/tag.sh.')
      skill(dir, 'api-style', 'Our API conventions', 'Use snake_case.')
      local m = H.mock({ H.turn({ text = 'Released.' }) })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      H.wait_attached()
      H.eq("v:lua.require'stepwise.skills'.omnifunc", vim.bo[buf].omnifunc, 'the chat completes skills')

      local info = H.truthy(popup_after('/'), 'a popup after typing /')
      local shown = {}
      for _, it in ipairs(info.items) do
        shown[#shown + 1] = { it.abbr, it.menu }
      end
      table.sort(shown, function(a, b)
        return a[1] < b[1]
      end)
      H.eq({ { '/api-style', 'Our API conventions' }, { '/release', 'How we release: tag, then publish' } }, shown, 'the skills and their descriptions')
      H.eq(-1, info.selected, 'nothing chosen until the user chooses')
      H.eq('/', api.nvim_buf_get_lines(buf, -2, -1, false)[1], 'a / alone stays a /')

      -- the omnifunc: from the `/` on, the names starting with what follows it
      api.nvim_buf_set_lines(buf, -2, -1, false, { '/re' })
      api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(buf), 3 })
      local omni = require('stepwise.skills').omnifunc
      H.eq(1, omni(1, ''), 'the completion starts after the /')
      local items = omni(0, 're')
      H.eq(1, #items, 'one skill starts with re')
      H.eq('release', items[1].word, 'its name goes in')
      -- not on a line that is not the prompt's first
      api.nvim_win_set_cursor(0, { 1, 0 })
      H.eq(-3, omni(1, ''), 'the plan line is not the prompt')

      -- `/release 1.2` sent: the model reads the skill with it
      api.nvim_buf_set_lines(buf, -2, -1, false, { '/release 1.2' })
      vim.cmd('write')
      H.eq('end_turn', H.wait_idle(cap, 20000).reason, 'the run ends')
      local texts = H.find_all(H.recorded(m)[1], function(t)
        return t.type == 'text' and type(t.text) == 'string'
      end)
      local all = {}
      for _, t in ipairs(texts) do
        all[#all + 1] = t.text
      end
      local sent = table.concat(all, '\n')
      H.contains(sent, '/release 1.2', 'the prompt')
      H.contains(sent, '<skill name="release" path="' .. vim.uv.fs_realpath(dir) .. '/.agents/skills/release">\n# Release\nRun scripts/tag.sh.\n</skill>', 'the skill')
    end,
  },
})
