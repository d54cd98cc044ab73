"""The history's notices in Simplified Chinese."""

TEXTS = {
    "cut_off": "*已中断：生成这条回复时服务器停止了。*",  # ends a stored reply
    "not_saved": "这条消息没有保存：它带有另一个对话中某条消息的 id。请刷新页面后重新发送。",
    "failing.text": ("⚠️ 这个对话无法保存：历史数据库（{where}）存不下它的文字（“{reason}”）。对话可以继续；这里显示"
                     "的内容不会出现在历史中。"),
    "failing": ("⚠️ 这个对话无法保存：历史数据库（{where}）报错“{reason}”。对话可以继续；在此期间写下的对话轮次不会出"
                "现在历史中。请释放磁盘空间或修正数据库的权限，保存会自行恢复。"),
}
