-- :Stepwise review: each changed file in diff mode against a read-only buffer with its before text, the
-- unreviewed hunks in the sign column, :Stepwise review keep|undo [path] (the buffer, the disk).
local H = require('helpers')
local api = vim.api

--- Record the review's User events from now on.
local function review_events()
  local ev = { review = {}, opened = {}, reviewed = {} }
  local group = api.nvim_create_augroup('stepwise-test-review', { clear = true })
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'StepwiseReview', 'StepwiseReviewOpened', 'StepwiseReviewed' },
    callback = function(e)
      local key = ({ StepwiseReview = 'review', StepwiseReviewOpened = 'opened', StepwiseReviewed = 'reviewed' })[e.match]
      table.insert(ev[key], vim.deepcopy(e.data))
    end,
  })
  return ev
end

local FILES = { ['a.txt'] = 'one\ntwo\nthree\nfour\nfive\n', ['b.txt'] = 'bee\n' }

--- A run that changes a.txt (lines 2 and 5: two hunks), b.txt and creates c.txt; waits until the review is
--- pending.
local function changed_run(state_dir)
  local dir = H.workspace(FILES)
  local m = H.mock({
    H.turn({
      calls = {
        { 'edit_file', { path = 'a.txt', old_text = 'two', new_text = 'TWO' } },
        { 'edit_file', { path = 'a.txt', old_text = 'five', new_text = 'FIVE' } },
        { 'edit_file', { path = 'b.txt', old_text = 'bee', new_text = 'BEE' } },
        { 'write_file', { path = 'c.txt', content = 'new file\n' } },
      },
    }),
    H.turn({ text = 'Changed three files.' }),
  })
  H.setup(m, nil, state_dir)
  local cap = H.capture()
  local ev = review_events()
  vim.cmd('Stepwise run Change the files')
  H.eq('end_turn', H.wait_idle(cap, 20000).reason, 'the run ends normally')
  H.wait(function()
    local last = ev.review[#ev.review]
    return last and last.pending['a.txt'] == 2 and last.pending['b.txt'] and last.pending['c.txt']
  end, 10000, 'stepwise/review with the three files pending', function()
    return ev.review
  end)
  return dir, cap, ev, m
end

--- The tab showing `rel` in diff mode: its before window and file window.
local function diff_tab(dir, rel)
  for _, tab in ipairs(api.nvim_list_tabpages()) do
    local before, file
    for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
      local name = api.nvim_buf_get_name(api.nvim_win_get_buf(w))
      if name == 'stepwise://before/' .. rel then
        before = w
      elseif name == dir .. '/' .. rel then
        file = w
      end
    end
    if before and file then
      return { tab = tab, before = before, file = file }
    end
  end
end

return H.spec({
  {
    name = 'review: each changed file in diff mode against its before text; unreviewed hunks in the sign column',
    timeout = 60000,
    fn = function()
      local dir, _, ev = changed_run()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      local abuf = api.nvim_get_current_buf()
      H.eq('one\nTWO\nthree\nfour\nFIVE', H.buf_text(abuf), 'the agent changed a.txt')
      local review = require('stepwise.review')
      H.wait(function()
        return #review.signs(abuf) > 0
      end, 5000, 'the signs of a.txt')
      H.eq({ { 1, '┃' }, { 4, '┃' } }, review.signs(abuf), 'two unreviewed hunks, on lines 2 and 5')
      -- keep the hunk of line 2 only: its sign goes, the other stays
      local seen = #ev.review
      vim.cmd('2Stepwise review keep')
      H.wait(function()
        return #ev.reviewed == 1 and #ev.review > seen and ev.review[#ev.review].pending['a.txt'] == 1
      end, 10000, 'one hunk of a.txt left', function()
        return { reviewed = ev.reviewed, review = ev.review }
      end)
      H.eq({ 0 }, ev.reviewed[1].hunks, 'the hunk sent is the first')
      H.eq({ { 4, '┃' } }, review.signs(abuf), 'the kept hunk has no sign any more')

      vim.cmd('Stepwise review')
      H.wait(function()
        return #ev.opened == 1
      end, 10000, 'the review to open')
      H.eq(3, ev.opened[1].files, 'three files to review')
      for rel, before in pairs({ ['a.txt'] = { 'one', 'two', 'three', 'four', 'five' }, ['b.txt'] = { 'bee' }, ['c.txt'] = { '' } }) do
        local t = H.truthy(diff_tab(dir, rel), 'a diff tab for ' .. rel)
        H.eq(true, vim.wo[t.before].diff, rel .. ': the before window is in diff mode')
        H.eq(true, vim.wo[t.file].diff, rel .. ': the file window is in diff mode')
        local bbuf = api.nvim_win_get_buf(t.before)
        H.eq(before, api.nvim_buf_get_lines(bbuf, 0, -1, false), rel .. ': the before text')
        H.eq(false, vim.bo[bbuf].modifiable, rel .. ': the before buffer is read-only')
        H.eq('nofile', vim.bo[bbuf].buftype, rel .. ': the before buffer is a scratch buffer')
      end
      local t = diff_tab(dir, 'a.txt')
      H.eq(abuf, api.nvim_win_get_buf(t.file), 'the file window shows the buffer itself')
      -- ]c goes to the hunk; `do` there takes the before text, hunk by hunk
      api.nvim_set_current_tabpage(t.tab)
      api.nvim_set_current_win(t.file)
      vim.cmd('normal! gg]c')
      H.eq(2, api.nvim_win_get_cursor(t.file)[1], ']c lands on the hunk')
      vim.cmd('diffget')
      H.eq('one\ntwo\nthree\nfour\nFIVE', H.buf_text(abuf), '`do` put the before line back')
    end,
  },
  {
    name = 'review: undo of one hunk and of the current file (buffer), of a file not loaded (disk), keep of a created file',
    timeout = 60000,
    fn = function()
      local dir, _, ev = changed_run()
      -- b.txt is not open in the editor: its undo goes to the disk
      local bbuf = vim.fn.bufnr(dir .. '/b.txt')
      if bbuf > 0 then
        vim.cmd('bwipeout! ' .. bbuf)
      end
      H.eq('BEE\n', H.read(dir .. '/b.txt'), 'b.txt as the agent left it')
      vim.cmd('Stepwise review a.txt')
      H.wait(function()
        return #ev.opened == 1
      end, 10000, 'the review of a.txt to open')
      H.eq(1, ev.opened[1].files, 'only a.txt')
      local t = H.truthy(diff_tab(dir, 'a.txt'), 'the diff tab of a.txt')
      local abuf = api.nvim_win_get_buf(t.file)
      api.nvim_set_current_win(t.file)

      -- a range: the hunks on those lines only
      vim.cmd('5Stepwise review undo')
      H.wait(function()
        return #ev.reviewed == 1
      end, 10000, 'the answer to undo the hunk of line 5')
      H.eq({ 1 }, ev.reviewed[1].hunks, 'the second hunk')
      H.wait(function()
        return H.buf_text(abuf) == 'one\nTWO\nthree\nfour\nfive'
      end, 5000, 'line 5 back as before, line 2 as the agent left it', function()
        return H.buf_text(abuf)
      end)
      H.truthy(diff_tab(dir, 'a.txt'), 'still in review: one hunk is left')

      -- no path: the current buffer's file
      vim.cmd('Stepwise review undo')
      H.wait(function()
        return #ev.reviewed == 2
      end, 10000, 'the answer to undo a.txt')
      H.eq({ 'a.txt' }, ev.reviewed[2].result.undone, 'a.txt undone')
      H.wait(function()
        return H.buf_text(abuf) == 'one\ntwo\nthree\nfour\nfive'
      end, 5000, 'the buffer of a.txt back as before', function()
        return H.buf_text(abuf)
      end)
      H.eq(nil, diff_tab(dir, 'a.txt'), 'the before buffer is gone')
      H.eq(false, vim.wo[t.file].diff, 'the file is out of diff mode')
      -- the editor can undo the undo
      api.nvim_buf_call(abuf, function()
        vim.cmd('silent undo')
      end)
      H.eq('one\nTWO\nthree\nfour\nfive', H.buf_text(abuf), 'u brings the agent\'s line 2 back')
      api.nvim_buf_call(abuf, function()
        vim.cmd('silent redo')
      end)

      vim.cmd('Stepwise review undo b.txt')
      H.wait(function()
        return #ev.reviewed == 3
      end, 10000, 'the answer to undo b.txt')
      H.eq({ 'b.txt' }, ev.reviewed[3].result.undone, 'b.txt undone')
      H.eq('bee\n', H.read(dir .. '/b.txt'), 'b.txt on disk as before')

      vim.cmd('Stepwise review keep c.txt')
      H.wait(function()
        return #ev.reviewed == 4
      end, 10000, 'the answer to keep c.txt')
      H.eq(nil, ev.reviewed[4].result.conflicts[1], 'no conflict')
      H.eq('new file\n', H.read(dir .. '/c.txt'), 'c.txt kept')
      H.wait(function()
        local last = ev.review[#ev.review]
        return last and last.pending['c.txt'] == nil and last.pending['b.txt'] == nil
      end, 10000, 'b.txt and c.txt no longer pending', function()
        return ev.review
      end)
      local cbuf = vim.fn.bufnr(dir .. '/c.txt')
      if cbuf > 0 and api.nvim_buf_is_loaded(cbuf) then
        H.eq({}, require('stepwise.review').signs(cbuf), 'no signs on the kept file')
      end
    end,
  },
  {
    name = 'review: the server\'s Keep / Undo lenses sit above each hunk; running Undo takes that hunk back',
    timeout = 60000,
    fn = function()
      local dir, _, ev = changed_run()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      local abuf = api.nvim_get_current_buf()
      H.wait_attached(abuf)
      require('stepwise.handlers').refresh_lenses(nil)
      H.wait(function()
        return H.lens_text(abuf, 1):find('Undo', 1, true) and H.lens_text(abuf, 4):find('Undo', 1, true)
      end, 10000, 'Keep / Undo lenses on lines 2 and 5', function()
        return { H.lens_text(abuf, 1), H.lens_text(abuf, 4) }
      end)
      H.contains(H.lens_text(abuf, 4), 'Keep', 'a Keep lens too')
      -- as a user does: cursor on the line, vim.lsp.codelens.run(), pick Undo
      local offered
      H.stub_select(function(items, opts, on_choice)
        offered = vim.tbl_map(function(it)
          return opts.format_item and opts.format_item(it) or tostring(it)
        end, items)
        for i, it in ipairs(items) do
          if offered[i]:find('Undo', 1, true) then
            return on_choice(it)
          end
        end
        on_choice(nil)
      end)
      api.nvim_win_set_cursor(0, { 5, 0 })
      local seen = #ev.review
      vim.lsp.codelens.run()
      H.wait(function()
        return H.buf_text(abuf) == 'one\nTWO\nthree\nfour\nfive'
      end, 10000, 'the hunk of line 5 undone', function()
        return { text = H.buf_text(abuf), offered = offered }
      end)
      H.wait(function()
        return #ev.review > seen and ev.review[#ev.review].pending['a.txt'] == 1
      end, 10000, 'one hunk of a.txt left to review', function()
        return ev.review
      end)
      H.eq({ { 1, '┃' } }, require('stepwise.review').signs(abuf), 'the sign of the undone hunk is gone')
    end,
  },
  {
    name = 'review: after a restart the unreviewed hunks are marked again, and :Stepwise review still opens them',
    timeout = 60000,
    fn = function()
      local state_dir = H.tmpdir('state')
      local dir, _, ev, m = changed_run(state_dir)
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      vim.cmd('2Stepwise review keep')
      H.wait(function()
        return #ev.reviewed == 1 and ev.review[#ev.review].pending['a.txt'] == 1
      end, 10000, 'one hunk of a.txt kept')
      require('stepwise').stop(3000)
      vim.cmd('silent! %bwipeout!')
      local seen = #ev.review
      H.setup(m, nil, state_dir)
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      local abuf = api.nvim_get_current_buf()
      H.wait(function()
        return #ev.review > seen and ev.review[#ev.review].pending['a.txt'] == 1
      end, 15000, 'stepwise/review from the restored session', function()
        return { disk = H.read(dir .. '/a.txt'), review = ev.review }
      end)
      H.eq({ { 4, '┃' } }, require('stepwise.review').signs(abuf), 'the kept hunk stays kept, the other is marked')
      vim.cmd('Stepwise review a.txt')
      H.wait(function()
        return #ev.opened == 1
      end, 10000, 'the review to open')
      local t = H.truthy(diff_tab(dir, 'a.txt'), 'the diff tab of a.txt')
      H.eq({ 'one', 'two', 'three', 'four', 'five' }, api.nvim_buf_get_lines(api.nvim_win_get_buf(t.before), 0, -1, false), 'the before text')
    end,
  },
  {
    name = 'review: :[range]Stepwise review comment sends the comment on those lines to the agent',
    timeout = 60000,
    fn = function()
      local dir = H.workspace(FILES)
      local m = H.mock({
        H.turn({ calls = { { 'edit_file', { path = 'a.txt', old_text = 'five', new_text = 'FIVE' } } } }),
        H.turn({ text = 'Changed it.' }),
        H.turn({ text = 'I will keep it lowercase.' }),
      })
      H.setup(m)
      local cap = H.capture()
      local ev = review_events()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/a.txt'))
      vim.cmd('Stepwise run Shout the last line')
      H.eq('end_turn', H.wait_idle(cap, 20000).reason, 'the run ends')
      local before = #cap.status
      vim.cmd('5Stepwise review comment keep it lowercase')
      H.wait(function()
        return #ev.reviewed == 1
      end, 10000, 'the comment to be sent')
      H.eq({ 0 }, ev.reviewed[1].hunks, 'about the hunk of line 5')
      H.wait_idle(cap, 20000, before)
      local last = H.recorded(m)[3]
      local texts = {}
      for _, b in ipairs(H.find_all(last, function(t)
        return t.type == 'text' and type(t.text) == 'string'
      end)) do
        texts[#texts + 1] = b.text
      end
      H.contains(table.concat(texts, '\n'), 'Review comment on a.txt (line', 'the comment names the file and lines')
      H.contains(table.concat(texts, '\n'), 'keep it lowercase', 'the comment text')
    end,
  },
})
